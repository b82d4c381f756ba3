-- Quarantines the job with the reason $6, if the claim still holds it (the
-- fence of finish.sql).
-- PostgreSQL: now as in finish.sql.
-- args: $1 queue, $2 id, $3 owner, $4 token, $5 now (NULL: the server's clock, leaseq_now()), $6 reason
-- returns: lease_until
-- index: leaseq_jobs_queue_id_key
-- fenced
UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = $6, updated_at = coalesce($5::bigint, leaseq_now())
WHERE queue = $1 AND id = $2 AND owner = $3 AND token = $4 AND status = 'leased'
  AND lease_until > coalesce($5::bigint, leaseq_now()) AND (deadline IS NULL OR deadline > coalesce($5::bigint, leaseq_now()))
RETURNING lease_until
