-- Ends EnqueueTx's savepoint, keeping its jobs in the caller's transaction
-- (after a rollback to it, keeping nothing).

RELEASE SAVEPOINT leaseq_enqueue
