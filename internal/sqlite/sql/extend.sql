-- Sets the lease end of a claim to min(now + lease, deadline), counted from
-- now. The job stays out of leaseq_jobs_ready (ready = 0 also undoes a
-- promotion made while a clock set back had the lease look ended).
-- The fence: see finish.sql.
-- fenced
-- args: ?1 queue, ?2 id, ?3 owner, ?4 token, ?5 now, ?6 lease (ms)
-- returns: lease_until
-- index: sqlite_autoindex_leaseq_jobs_1
-- PostgreSQL: least() where SQLite has its two-argument min().

UPDATE leaseq_jobs
SET lease_until = min(?5 + ?6, coalesce(deadline, ?5 + ?6)), due_at = min(?5 + ?6, coalesce(deadline, ?5 + ?6)),
    ready = 0, updated_at = ?5
WHERE queue = ?1 AND id = ?2 AND owner = ?3 AND token = ?4 AND status = 'leased'
  AND lease_until > ?5 AND (deadline IS NULL OR deadline > ?5)
RETURNING lease_until
