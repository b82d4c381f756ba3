-- Leases up to ?4 claimable jobs in one statement: the head of
-- leaseq_jobs_ready, in its order (priority, then due time, then enqueue
-- order), each with a new token and attempt and a lease capped at its
-- deadline. A row is claimable when due (due_at <= now), or pending without
-- a run_at after now: the second half matters only after the clock stepped
-- back past the instant a job was enqueued or requeued, so that a job
-- claimable at once stays claimable (rules 1 and 15 in docs/rules.md)
-- instead of waiting for the clock to come back. RETURNING gives the rows
-- in no promised order; the engine sorts them. A paused queue (rule 54)
-- leases nothing: a Pause that committed after the idle check still wins.
-- The limit is ?4 + 0, not ?4: SQLite's planner reads a LIMIT that is a
-- bare parameter, and a statement so planned is prepared again whenever
-- the parameter is bound to another value: a pool's claims, whose sizes
-- vary from cycle to cycle, spent as much on that as on the claim itself.
-- args: ?1 owner, ?2 now, ?3 lease end (now + lease), ?4 max, ?5 queue
-- returns: seq, id, qty, payload, token, attempts, lease_until, deadline, priority, kind, created_at, run_at, max_attempts
-- index: leaseq_jobs_ready, leaseq_paused

UPDATE leaseq_jobs
SET status = 'leased', ready = 0, owner = ?1, token = token + 1, attempts = attempts + 1,
    lease_until = CASE WHEN deadline IS NOT NULL AND deadline < ?3 THEN deadline ELSE ?3 END,
    due_at = CASE WHEN deadline IS NOT NULL AND deadline < ?3 THEN deadline ELSE ?3 END,
    updated_at = ?2
WHERE seq IN (SELECT seq FROM leaseq_jobs WHERE queue = ?5 AND ready = 1 AND (due_at <= ?2 OR status = 'pending' AND coalesce(run_at, ?2) <= ?2)
                AND NOT EXISTS (SELECT 1 FROM leaseq_paused WHERE queue = ?5)
              ORDER BY priority DESC, due_at, seq LIMIT ?4 + 0)
RETURNING seq, id, qty, payload, token, attempts, lease_until, deadline, priority, kind, created_at, run_at, max_attempts
