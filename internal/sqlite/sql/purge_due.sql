-- Whether a purge chunk (purge_tokens.sql, purge.sql) would delete a job:
-- the read of a pool's retention (rule 55) before it takes the write lock.
-- args: ?1 queue, ?2 status, ?3 before
-- returns: due
-- index: leaseq_jobs_finished

SELECT EXISTS (SELECT 1 FROM leaseq_jobs
    WHERE queue = ?1 AND status = ?2 AND status IN ('done', 'quarantined') AND updated_at < ?3)
