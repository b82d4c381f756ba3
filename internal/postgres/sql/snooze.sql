-- Snooze (rule 49): puts the job back to pending, due at now + $6 ms, with
-- the reason $7, and raises its max_attempts by one, so that the claim
-- spends no attempt (attempts still count claims), if the claim still
-- holds it (the fence of finish.sql); a job whose delay reaches its
-- deadline is quarantined instead with the reason $8 and max_attempts as
-- it was, as release.sql does. A release with no delay goes straight into
-- leaseq_jobs_ready. max_attempts stops rising at MaxCount (2^31-1, the
-- integer column's largest): a snooze at that count spends its attempt.
-- PostgreSQL: the reasons are cast to text and ready is a CASE (SQLite
-- stores the comparison's 0 or 1); now as in finish.sql.
-- args: $1 queue, $2 id, $3 owner, $4 token, $5 now (NULL: the server's clock, leaseq_now()), $6 delay (ms), $7 reason, $8 reason past the deadline
-- returns: lease_until
-- index: leaseq_jobs_queue_id_key
-- fenced
UPDATE leaseq_jobs
SET status = CASE WHEN coalesce($5::bigint, leaseq_now()) + $6 >= coalesce(deadline, coalesce($5::bigint, leaseq_now()) + $6 + 1)
        THEN 'quarantined' ELSE 'pending' END,
    reason = CASE WHEN coalesce($5::bigint, leaseq_now()) + $6 >= coalesce(deadline, coalesce($5::bigint, leaseq_now()) + $6 + 1)
        THEN $8::text ELSE $7::text END,
    max_attempts = CASE WHEN coalesce($5::bigint, leaseq_now()) + $6 >= coalesce(deadline, coalesce($5::bigint, leaseq_now()) + $6 + 1)
        THEN max_attempts ELSE least(max_attempts, 2147483646) + 1 END,
    ready = CASE WHEN $6 = 0 THEN 1 ELSE 0 END,
    run_at = coalesce($5::bigint, leaseq_now()) + $6, due_at = coalesce($5::bigint, leaseq_now()) + $6, lease_until = coalesce($5::bigint, leaseq_now()), updated_at = coalesce($5::bigint, leaseq_now())
WHERE queue = $1 AND id = $2 AND owner = $3 AND token = $4 AND status = 'leased'
  AND lease_until > coalesce($5::bigint, leaseq_now()) AND (deadline IS NULL OR deadline > coalesce($5::bigint, leaseq_now()))
RETURNING lease_until
