-- The earliest instant at which a delayed job or a lease of the queue
-- becomes claimable: the head of leaseq_jobs_waiting (an idle worker sleeps
-- until then). NULL for a paused queue too (rule 54), which nothing claims
-- until Resume wakes its workers.
-- args: $1 queue
-- returns: min(due_at), NULL when none
-- index: leaseq_jobs_waiting, leaseq_paused_pkey
SELECT min(due_at) FROM leaseq_jobs
WHERE queue = $1 AND ready = 0 AND status IN ('pending', 'leased')
  AND NOT EXISTS (SELECT 1 FROM leaseq_paused WHERE queue = $1)
