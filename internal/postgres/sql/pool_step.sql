-- Runs one step of a worker pool's gathered calls (leaseq_pool_step in
-- schema.sql): the finishes, each fenced as finish.sql fences one, then the
-- claims, in one statement at one instant on the server's clock with one
-- commit. Accepted finishes come back with req 0, the claims of the i-th
-- claim request with req i.
-- PostgreSQL only: SQLite gathers calls by group commit instead.
-- args: $1 queue, $2 finishes' ids, $3 finishes' owners, $4 finishes' tokens, $5 claims' owners, $6 claims' leases (ms), $7 claims' maxes
-- returns: req, seq, id, owner, qty, payload, token, attempts, lease_until, deadline, priority, kind, created_at, run_at, max_attempts
-- index: leaseq_jobs_queue_id_key, leaseq_jobs_ready
SELECT req, seq, id, owner, qty, payload, token, attempts, lease_until, deadline, priority, kind, created_at, run_at, max_attempts
FROM leaseq_pool_step($1, $2, $3, $4, $5, $6, $7)
