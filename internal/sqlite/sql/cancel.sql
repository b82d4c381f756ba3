-- An operator's Cancel: quarantines a pending or leased job with the reason
-- ?3. A holder's later Finish, Extend, Release or Fail finds the job not
-- leased and is refused.
-- args: ?1 queue, ?2 id, ?3 reason, ?4 now
-- index: sqlite_autoindex_leaseq_jobs_1

UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = ?3, updated_at = ?4
WHERE queue = ?1 AND id = ?2 AND status IN ('pending', 'leased')
