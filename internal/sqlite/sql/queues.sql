-- The queue names, found by skipping through an index that starts with the
-- queue: each step asks for the least name after the last one, one probe of
-- the index, so listing k queues costs k probes however many jobs each
-- holds. A DISTINCT or GROUP BY would read every job. The names come in the
-- engine's collation order; the root sorts them.
-- returns: name
-- index: sqlite_autoindex_leaseq_jobs_1

WITH RECURSIVE q(name) AS (
    SELECT min(queue) FROM leaseq_jobs
    UNION ALL
    SELECT (SELECT min(queue) FROM leaseq_jobs WHERE queue > q.name) FROM q WHERE q.name IS NOT NULL)
SELECT name FROM q WHERE name IS NOT NULL
