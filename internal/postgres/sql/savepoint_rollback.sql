-- Undoes what EnqueueTx wrote in the caller's transaction since its savepoint.
ROLLBACK TO SAVEPOINT leaseq_enqueue
