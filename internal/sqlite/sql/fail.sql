-- Quarantines the job of a claim at once with the reason ?6: work that
-- retrying cannot fix.
-- The fence: see finish.sql.
-- fenced
-- args: ?1 queue, ?2 id, ?3 owner, ?4 token, ?5 now, ?6 reason
-- returns: lease_until
-- index: sqlite_autoindex_leaseq_jobs_1

UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = ?6, updated_at = ?5
WHERE queue = ?1 AND id = ?2 AND owner = ?3 AND token = ?4 AND status = 'leased'
  AND lease_until > ?5 AND (deadline IS NULL OR deadline > ?5)
RETURNING lease_until
