-- A page of one status, in enqueue order, after the job of seq $3: a range
-- of leaseq_jobs_status.
-- args: $1 queue, $2 status, $3 after seq (0: from the start), $4 limit
-- returns: the columns of get.sql
-- index: leaseq_jobs_status
SELECT id, queue, qty, payload, status, owner, token, attempts, max_attempts,
    lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind
FROM leaseq_jobs
WHERE queue = $1 AND status = $2 AND seq > $3 ORDER BY seq LIMIT $4
