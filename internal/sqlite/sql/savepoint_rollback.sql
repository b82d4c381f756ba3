-- Takes back what EnqueueTx wrote in the caller's transaction since its
-- savepoint; savepoint_release then ends the savepoint.

ROLLBACK TO SAVEPOINT leaseq_enqueue
