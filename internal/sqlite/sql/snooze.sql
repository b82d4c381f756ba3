-- Snooze (rule 49): puts the job of a claim back to pending, due at now +
-- delay, with the reason ?7, and raises its max_attempts by one, so that
-- the claim spends no attempt (attempts still count claims); or
-- quarantines it at once, with the reason ?8 and max_attempts as it was,
-- when the delay would end at or after its deadline, as release.sql does.
-- A snoozed job never runs out of attempts: it had at most max_attempts
-- before the rise. max_attempts stops rising at MaxCount (2^31-1, the
-- largest PostgreSQL's integer column holds, so both engines agree): a
-- snooze at that count spends its attempt. A job due at once goes straight into leaseq_jobs_ready.
-- The fence: see finish.sql.
-- fenced
-- args: ?1 queue, ?2 id, ?3 owner, ?4 token, ?5 now, ?6 delay (ms), ?7 reason, ?8 reason when the delay reaches the deadline
-- returns: lease_until
-- index: sqlite_autoindex_leaseq_jobs_1

UPDATE leaseq_jobs
SET status = CASE WHEN ?5 + ?6 >= coalesce(deadline, ?5 + ?6 + 1) THEN 'quarantined' ELSE 'pending' END,
    reason = CASE WHEN ?5 + ?6 >= coalesce(deadline, ?5 + ?6 + 1) THEN ?8 ELSE ?7 END,
    max_attempts = CASE WHEN ?5 + ?6 >= coalesce(deadline, ?5 + ?6 + 1) THEN max_attempts ELSE min(max_attempts + 1, 2147483647) END,
    ready = (?6 = 0),
    run_at = ?5 + ?6, due_at = ?5 + ?6, lease_until = ?5, updated_at = ?5
WHERE queue = ?1 AND id = ?2 AND owner = ?3 AND token = ?4 AND status = 'leased'
  AND lease_until > ?5 AND (deadline IS NULL OR deadline > ?5)
RETURNING lease_until
