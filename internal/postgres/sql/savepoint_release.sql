-- Ends EnqueueTx's savepoint, keeping what it wrote (or, after
-- savepoint_rollback.sql, nothing).
RELEASE SAVEPOINT leaseq_enqueue
