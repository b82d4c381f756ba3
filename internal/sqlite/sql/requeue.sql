-- An operator's Requeue: puts a quarantined job back in line, claimable at
-- once. attempts starts over, so the job gets its full MaxAttempts again;
-- the token is kept, so the next claim still gets a token no earlier claim
-- ever had. Not fenced (an operator holds no claim); a job whose deadline
-- has passed is left, as it would be quarantined again at once.
-- args: ?1 queue, ?2 id, ?3 now
-- index: sqlite_autoindex_leaseq_jobs_1

UPDATE leaseq_jobs
SET status = 'pending', attempts = 0, lease_until = NULL, run_at = NULL, reason = '',
    due_at = ?3, ready = 1, updated_at = ?3
WHERE queue = ?1 AND id = ?2 AND status = 'quarantined' AND (deadline IS NULL OR deadline > ?3)
