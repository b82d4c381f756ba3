-- The enqueue order (seq) of List's AfterID, where its page starts; no row
-- is an AfterID not in the queue.
-- args: ?1 queue, ?2 id
-- returns: seq
-- index: sqlite_autoindex_leaseq_jobs_1

SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND id = ?2
