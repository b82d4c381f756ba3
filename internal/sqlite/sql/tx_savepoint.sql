-- Opens the savepoint of one InTx or FinishTx function (rules 43 and 46 in
-- docs/rules.md), so that a function that fails, or a Finish refused after
-- it, takes back its own writes alone: on SQLite the transaction may hold
-- other calls' work, which commits.

SAVEPOINT leaseq_tx
