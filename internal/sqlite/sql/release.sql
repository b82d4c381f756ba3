-- Puts the job of a claim back to pending, due at now + delay, with the
-- reason ?7; or quarantines it at once, with the reason ?8 or ?9, when its
-- attempts are used up or the delay would end at or after its deadline (it
-- could never be finished). The token and the attempts stay, so the next
-- claim still gets a new token. A job due at once goes straight into
-- leaseq_jobs_ready.
-- The fence: see finish.sql.
-- fenced
-- args: ?1 queue, ?2 id, ?3 owner, ?4 token, ?5 now, ?6 delay (ms), ?7 reason, ?8 reason when the attempts are used up, ?9 reason when the delay reaches the deadline
-- returns: lease_until
-- index: sqlite_autoindex_leaseq_jobs_1

UPDATE leaseq_jobs
SET status = CASE WHEN attempts >= max_attempts OR ?5 + ?6 >= coalesce(deadline, ?5 + ?6 + 1)
        THEN 'quarantined' ELSE 'pending' END,
    reason = CASE WHEN attempts >= max_attempts THEN ?8
        WHEN ?5 + ?6 >= coalesce(deadline, ?5 + ?6 + 1) THEN ?9 ELSE ?7 END,
    ready = (?6 = 0 AND attempts < max_attempts),
    run_at = ?5 + ?6, due_at = ?5 + ?6, lease_until = ?5, updated_at = ?5
WHERE queue = ?1 AND id = ?2 AND owner = ?3 AND token = ?4 AND status = 'leased'
  AND lease_until > ?5 AND (deadline IS NULL OR deadline > ?5)
RETURNING lease_until
