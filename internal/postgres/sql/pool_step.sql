-- Runs one cycle of a worker pool (leaseq_pool_step in schema.sql, rule 48):
-- the finishes, each fenced as finish.sql fences one, then the claim, in one
-- statement at one instant on the server's clock with one commit. Accepted
-- finishes come back with req 0, the claim's jobs with req 1 (the function
-- takes arrays of claim requests; a cycle makes one, or none).
-- PostgreSQL only: SQLite runs a cycle as one transaction of finish.sql and
-- claim.sql (cycle.go).
-- args: $1 queue, $2 finishes' ids, $3 finishes' owners, $4 finishes' tokens, $5 claims' owners, $6 claims' leases (ms), $7 claims' maxes
-- returns: req, seq, id, owner, qty, payload, token, attempts, lease_until, deadline, priority, kind, created_at, run_at, max_attempts
-- index: leaseq_jobs_queue_id_key, leaseq_jobs_ready
SELECT req, seq, id, owner, qty, payload, token, attempts, lease_until, deadline, priority, kind, created_at, run_at, max_attempts
FROM leaseq_pool_step($1, $2, $3, $4, $5, $6, $7)
