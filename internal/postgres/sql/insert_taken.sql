-- Finds which of a failed batch's IDs the queue has already, so that the
-- error names the first of them.
-- PostgreSQL only: SQLite's batch fails on the job's own INSERT.
-- args: $1 queue, $2 ids
-- returns: id
-- index: leaseq_jobs_queue_id_key
SELECT id FROM leaseq_jobs WHERE queue = $1 AND id = ANY($2)
