-- A page of List of every status: the first ?3 of each status after ?2,
-- merged. Each part is a range of leaseq_jobs_status, so a page costs at
-- most four times its size at any depth.
-- args: ?1 queue, ?2 after (a seq; 0 from the start), ?3 limit
-- returns: id, queue, qty, payload, status, owner, token, attempts, max_attempts, lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind
-- index: leaseq_jobs_status

SELECT id, queue, qty, payload, status, owner, token, attempts, max_attempts,
	lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind FROM leaseq_jobs WHERE seq IN (
    SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND status = 'pending' AND seq > ?2 ORDER BY seq LIMIT ?3) AS p
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND status = 'leased' AND seq > ?2 ORDER BY seq LIMIT ?3) AS l
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND status = 'done' AND seq > ?2 ORDER BY seq LIMIT ?3) AS d
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND status = 'quarantined' AND seq > ?2 ORDER BY seq LIMIT ?3) AS x
    ORDER BY seq LIMIT ?3)
ORDER BY seq
