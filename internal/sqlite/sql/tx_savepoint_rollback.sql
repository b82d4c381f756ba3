-- Takes back what an InTx or FinishTx function wrote since its savepoint
-- (its error, or the Finish refused after it); tx_savepoint_release then
-- ends the savepoint.

ROLLBACK TO SAVEPOINT leaseq_tx
