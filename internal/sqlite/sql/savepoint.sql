-- Opens EnqueueTx's savepoint on the caller's transaction, so that a failed
-- call leaves none of its jobs and the transaction usable.

SAVEPOINT leaseq_enqueue
