-- Quarantines a pending or leased job with the reason $3: an operator's
-- stop. A holder's later Finish, Extend, Release or Fail finds the job not
-- leased and is refused. Not fenced: an operator holds no claim.
-- args: $1 queue, $2 id, $3 reason, $4 now
-- index: leaseq_jobs_queue_id_key
UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = $3, updated_at = $4
WHERE queue = $1 AND id = $2 AND status IN ('pending', 'leased')
