-- The enqueue order (seq) of the job a List page starts after.
-- args: $1 queue, $2 id
-- returns: seq
-- index: leaseq_jobs_queue_id_key
SELECT seq FROM leaseq_jobs WHERE queue = $1 AND id = $2
