-- The last claim sweep, after the quarantine (a job due for quarantine must
-- never be promoted): moves the delayed jobs and leases whose time has come
-- into leaseq_jobs_ready, the due prefix of leaseq_jobs_waiting, so that
-- its cost is the number of jobs that just became claimable.
-- args: ?1 now, ?2 queue
-- index: leaseq_jobs_waiting
-- SQLite only.

UPDATE leaseq_jobs SET ready = 1
WHERE queue = ?2 AND ready = 0 AND status IN ('pending', 'leased') AND due_at <= ?1
