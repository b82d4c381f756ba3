-- Locks the rows of jobs of a queue, in ID order, so that the calls on them
-- read the clock only once they hold them (rule 8 in docs/rules.md): an
-- instant read before would be stale by however long the wait for the rows
-- took.
-- PostgreSQL only: SQLite's write lock is held from BEGIN IMMEDIATE.
-- args: $1 queue, $2 ids
-- index: leaseq_jobs_queue_id_key
SELECT 1 FROM leaseq_jobs WHERE queue = $1 AND id = ANY($2) ORDER BY id FOR UPDATE
