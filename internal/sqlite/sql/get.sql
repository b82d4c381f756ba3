-- Reads one job's row (Get).
-- args: ?1 queue, ?2 id
-- returns: id, queue, qty, payload, status, owner, token, attempts, max_attempts, lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind
-- index: sqlite_autoindex_leaseq_jobs_1

SELECT id, queue, qty, payload, status, owner, token, attempts, max_attempts,
	lease_until, deadline, run_at, priority, reason, created_at, updated_at, kind FROM leaseq_jobs WHERE queue = ?1 AND id = ?2
