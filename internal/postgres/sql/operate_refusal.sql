-- Reads the row an operator's update (requeue.sql, cancel.sql) did not
-- match, to say why: no row is an unknown ID.
-- args: $1 queue, $2 id
-- returns: status, deadline
-- index: leaseq_jobs_queue_id_key
SELECT status, deadline FROM leaseq_jobs WHERE queue = $1 AND id = $2
