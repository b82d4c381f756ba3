-- Tells whether a Claim has anything to do, from a read without the write
-- lock (rule 23 in docs/rules.md): a job in leaseq_jobs_ready that is
-- claimable at ?2 (as in claim), or a delayed job or lease in
-- leaseq_jobs_waiting whose time has come. Every job the quarantine sweep
-- may take is one of those too (a lease ends by its deadline at the latest,
-- and a pending job is due before its deadline), so "no" means nothing is
-- claimable and nothing is due for quarantine. A paused queue (rule 54) is
-- idle whatever it holds: its claims take no write lock.
-- args: ?1 queue, ?2 now
-- returns: busy (1: the Claim has work)
-- index: leaseq_jobs_ready, leaseq_jobs_waiting, leaseq_paused

SELECT (EXISTS (SELECT 1 FROM leaseq_jobs WHERE queue = ?1 AND ready = 1 AND (due_at <= ?2 OR status = 'pending' AND coalesce(run_at, ?2) <= ?2))
    OR EXISTS (SELECT 1 FROM leaseq_jobs
               WHERE queue = ?1 AND ready = 0 AND status IN ('pending', 'leased') AND due_at <= ?2))
   AND NOT EXISTS (SELECT 1 FROM leaseq_paused WHERE queue = ?1)
