-- Deletes a purge chunk: the rows purge_tokens picked, picked the same way
-- (see there), after their tokens were remembered.
-- args: ?1 queue, ?2 status, ?3 before, ?4 chunk size
-- index: leaseq_jobs_finished

DELETE FROM leaseq_jobs WHERE seq IN (SELECT seq FROM leaseq_jobs
    WHERE queue = ?1 AND status = ?2 AND status IN ('done', 'quarantined') AND updated_at < ?3
    ORDER BY updated_at LIMIT ?4)
