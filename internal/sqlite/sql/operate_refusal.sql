-- Reads the row of a job that an operator's update (requeue, cancel) did
-- not match, in the same transaction, to say why: no row is an unknown ID.
-- args: ?1 queue, ?2 id
-- returns: status, deadline
-- index: sqlite_autoindex_leaseq_jobs_1

SELECT status, deadline FROM leaseq_jobs WHERE queue = ?1 AND id = ?2
