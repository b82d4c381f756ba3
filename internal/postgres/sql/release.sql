-- Puts the job back to pending, due at now + $6 ms, with the reason $7, if
-- the claim still holds it (the fence of finish.sql); a job whose attempts are
-- used up, or whose delay reaches its deadline, is quarantined instead with
-- the reason $8 or $9. A release with no delay and attempts left goes
-- straight into leaseq_jobs_ready.
-- PostgreSQL: the reasons are cast to text and ready is a CASE (SQLite
-- stores the comparison's 0 or 1); now as in finish.sql.
-- args: $1 queue, $2 id, $3 owner, $4 token, $5 now (NULL: the server's clock, leaseq_now()), $6 delay (ms), $7 reason, $8 reason with the attempts used up, $9 reason past the deadline
-- returns: lease_until
-- index: leaseq_jobs_queue_id_key
-- fenced
UPDATE leaseq_jobs
SET status = CASE WHEN attempts >= max_attempts OR coalesce($5::bigint, leaseq_now()) + $6 >= coalesce(deadline, coalesce($5::bigint, leaseq_now()) + $6 + 1)
        THEN 'quarantined' ELSE 'pending' END,
    reason = CASE WHEN attempts >= max_attempts THEN $8::text
        WHEN coalesce($5::bigint, leaseq_now()) + $6 >= coalesce(deadline, coalesce($5::bigint, leaseq_now()) + $6 + 1) THEN $9::text ELSE $7::text END,
    ready = CASE WHEN $6 = 0 AND attempts < max_attempts THEN 1 ELSE 0 END,
    run_at = coalesce($5::bigint, leaseq_now()) + $6, due_at = coalesce($5::bigint, leaseq_now()) + $6, lease_until = coalesce($5::bigint, leaseq_now()), updated_at = coalesce($5::bigint, leaseq_now())
WHERE queue = $1 AND id = $2 AND owner = $3 AND token = $4 AND status = 'leased'
  AND lease_until > coalesce($5::bigint, leaseq_now()) AND (deadline IS NULL OR deadline > coalesce($5::bigint, leaseq_now()))
RETURNING lease_until
