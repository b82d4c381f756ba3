-- Ends an InTx or FinishTx function's savepoint, keeping what it wrote
-- (after a rollback to it, keeping nothing).

RELEASE SAVEPOINT leaseq_tx
