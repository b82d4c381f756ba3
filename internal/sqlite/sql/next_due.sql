-- The earliest instant at which a delayed job or a lease of the queue
-- becomes claimable, for an idle worker's sleep: the head of
-- leaseq_jobs_waiting. NULL when there is none.
-- args: ?1 queue
-- returns: min(due_at)
-- index: leaseq_jobs_waiting

SELECT min(due_at) FROM leaseq_jobs
WHERE queue = ?1 AND ready = 0 AND status IN ('pending', 'leased')
