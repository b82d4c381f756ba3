-- The second claim sweep: quarantines the pending jobs whose deadline
-- passed, a prefix of leaseq_jobs_pending_deadline.
-- args: ?1 now, ?2 queue
-- index: leaseq_jobs_pending_deadline
-- SQLite only: PostgreSQL sweeps in its function leaseq_sweep.

UPDATE leaseq_jobs
SET status = 'quarantined', ready = 0, updated_at = ?1,
    reason = 'deadline passed at ' || deadline || ' (unix ms), ' || attempts || ' of ' || max_attempts || ' attempts used'
WHERE queue = ?2 AND status = 'pending' AND deadline IS NOT NULL AND deadline <= ?1
