-- Runs a claim's sweeps (leaseq_sweep in schema.sql) as a statement of its
-- own, committed as the server ends it, so that the lock that lets one claim
-- of the queue at a time sweep is never held while the server waits for this
-- process.
-- PostgreSQL only: SQLite runs its sweep statements in the claim's
-- transaction.
-- args: $1 queue, $2 now (NULL: the server's clock)
-- index: leaseq_jobs_doomed, leaseq_jobs_pending_deadline, leaseq_jobs_waiting
SELECT leaseq_sweep($1, $2)
