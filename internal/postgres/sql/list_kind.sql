-- A page of List of one kind and one status (Filter.Kind, rule 50): a
-- range of leaseq_jobs_kind.
-- args: $1 queue, $2 kind (not ''), $3 status, $4 after (a seq; 0 from the start), $5 limit
-- returns: id, queue, qty, payload, status, owner, token, attempts, max_attempts, lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind
-- index: leaseq_jobs_kind
SELECT id, queue, qty, payload, status, owner, token, attempts, max_attempts,
    lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind
FROM leaseq_jobs
WHERE queue = $1 AND kind = $2 AND kind <> '' AND status = $3 AND seq > $4 ORDER BY seq LIMIT $5
