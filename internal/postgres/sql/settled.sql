-- Reads the rows of fenced calls whose answer was cut short, for the mark
-- each kind of call leaves on its row (outcome.go). FOR SHARE waits for a
-- transaction holding a row: the call's statement, which holds the row it
-- changes until it ends, or, waiting for the row itself, is ahead of the read
-- in the row's queue of waiters.
-- PostgreSQL only.
-- args: $1 queue, $2 ids (sorted, no repeats)
-- returns: id, status, owner, token, reason, lease_until, run_at, deadline, updated_at
-- index: leaseq_jobs_queue_id_key
SELECT id, status, owner, token, reason, lease_until, run_at, deadline, updated_at
FROM leaseq_jobs WHERE queue = $1 AND id = ANY($2) FOR SHARE
