-- Sets the lease end to min(now + $6 ms, deadline), if the claim still holds
-- the job (the fence of finish.sql). The job stays out of leaseq_jobs_ready:
-- its lease end is its due time in leaseq_jobs_waiting.
-- PostgreSQL: least() where SQLite has min(); now as in finish.sql.
-- args: $1 queue, $2 id, $3 owner, $4 token, $5 now (NULL: the server's clock, leaseq_now()), $6 lease (ms)
-- returns: lease_until
-- index: leaseq_jobs_queue_id_key
-- fenced
UPDATE leaseq_jobs
SET lease_until = least(coalesce($5::bigint, leaseq_now()) + $6, coalesce(deadline, coalesce($5::bigint, leaseq_now()) + $6)),
    due_at = least(coalesce($5::bigint, leaseq_now()) + $6, coalesce(deadline, coalesce($5::bigint, leaseq_now()) + $6)),
    ready = 0, updated_at = coalesce($5::bigint, leaseq_now())
WHERE queue = $1 AND id = $2 AND owner = $3 AND token = $4 AND status = 'leased'
  AND lease_until > coalesce($5::bigint, leaseq_now()) AND (deadline IS NULL OR deadline > coalesce($5::bigint, leaseq_now()))
RETURNING lease_until
