-- Leases up to $5 claimable jobs through leaseq_claim_jobs (schema.sql):
-- the head of leaseq_jobs_ready, in its order (priority, then due time, then
-- enqueue order), each row taken under its advisory lock and FOR UPDATE SKIP
-- LOCKED, so that a claim never waits for rows another transaction holds
-- (rule 39 in docs/rules.md). It is a plain SELECT, usable as a subquery.
-- PostgreSQL: a function call where SQLite runs the UPDATE itself; the
-- sweeps are sweep.sql, run first.
-- args: $1 queue, $2 owner, $3 now (NULL: the server's clock), $4 lease (ms), $5 max
-- returns: seq, id, qty, payload, token, attempts, lease_until, deadline, priority, kind, created_at, run_at, max_attempts
-- index: leaseq_jobs_ready
SELECT seq, id, qty, payload, token, attempts, lease_until, deadline, priority, kind, created_at, run_at, max_attempts
FROM leaseq_claim_jobs($1, $2, $3, $4, $5)
