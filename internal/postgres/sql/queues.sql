-- Finds the queue names by skipping through an index that starts with the
-- queue: each step asks for the least name after the last one, one probe of
-- the index, so listing k queues costs k probes however many jobs each
-- holds. A DISTINCT or GROUP BY would read every job. Names come in the
-- database's collation order.
-- returns: name
-- index: leaseq_jobs_queue_id_key
WITH RECURSIVE q(name) AS (
    SELECT min(queue) FROM leaseq_jobs
    UNION ALL
    SELECT (SELECT min(queue) FROM leaseq_jobs WHERE queue > q.name) FROM q WHERE q.name IS NOT NULL)
SELECT name FROM q WHERE name IS NOT NULL
