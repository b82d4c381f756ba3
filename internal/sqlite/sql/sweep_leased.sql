-- The first claim sweep (rule 6 in docs/rules.md): quarantines the leases
-- that ended with their attempts used up or whose deadline passed, before a
-- token is issued. A range scan of leaseq_jobs_doomed, whose key expression
-- the last condition repeats word for word. A leased job whose deadline
-- passed always has an expired lease, since no lease outlives its deadline,
-- so the condition equals "lease ended, and attempts used up or deadline
-- passed". The sweeps are separate statements so that a transaction
-- prepares each once and runs it for every claim in a group.
-- args: ?1 now, ?2 queue
-- index: leaseq_jobs_doomed
-- SQLite only: PostgreSQL sweeps in its function leaseq_sweep.

UPDATE leaseq_jobs
SET status = 'quarantined', ready = 0, updated_at = ?1,
    reason = CASE WHEN deadline IS NOT NULL AND deadline <= ?1
        THEN 'deadline passed at ' || deadline || ' (unix ms), ' || attempts || ' of ' || max_attempts || ' attempts used'
        ELSE 'max attempts reached: ' || attempts || ' of ' || max_attempts || ', last lease ended at ' || lease_until || ' (unix ms)'
    END
WHERE queue = ?2 AND status = 'leased' AND (attempts >= max_attempts OR deadline IS NOT NULL)
  AND (CASE WHEN attempts >= max_attempts THEN lease_until ELSE deadline END) <= ?1
