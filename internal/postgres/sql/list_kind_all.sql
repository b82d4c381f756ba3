-- A page of List of one kind and every status (Filter.Kind, rule 50): the
-- first $4 of each status after $3, merged, as list_all.sql does. Each part
-- is a range of leaseq_jobs_kind.
-- args: $1 queue, $2 kind (not ''), $3 after (a seq; 0 from the start), $4 limit
-- returns: id, queue, qty, payload, status, owner, token, attempts, max_attempts, lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind
-- index: leaseq_jobs_kind
SELECT id, queue, qty, payload, status, owner, token, attempts, max_attempts,
    lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind
FROM leaseq_jobs WHERE seq IN (
    SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = $1 AND kind = $2 AND kind <> '' AND status = 'pending' AND seq > $3 ORDER BY seq LIMIT $4) AS p
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = $1 AND kind = $2 AND kind <> '' AND status = 'leased' AND seq > $3 ORDER BY seq LIMIT $4) AS l
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = $1 AND kind = $2 AND kind <> '' AND status = 'done' AND seq > $3 ORDER BY seq LIMIT $4) AS d
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = $1 AND kind = $2 AND kind <> '' AND status = 'quarantined' AND seq > $3 ORDER BY seq LIMIT $4) AS x
    ORDER BY seq LIMIT $4)
ORDER BY seq
