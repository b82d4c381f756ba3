-- Opens EnqueueTx's savepoint in the caller's transaction, so that a failed
-- insert (or identity read, which on PostgreSQL would abort the caller's
-- transaction) can be undone and the transaction stays usable.
SAVEPOINT leaseq_enqueue
