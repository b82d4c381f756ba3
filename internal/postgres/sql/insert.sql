-- Writes one job, as the SQLite engine's insert.sql does, at the instant $9,
-- or the server's clock when that is NULL: the enqueue time, and when the job
-- is due. A job whose ID was purged starts from the purged job's last token
-- (leaseq_purged); a job due at once goes straight into leaseq_jobs_ready.
-- ON CONFLICT DO NOTHING makes a taken ID return no row instead of an error
-- that would abort the caller's transaction (EnqueueTx). The remembered token
-- it reads is that of the statement's snapshot, which a purge of the ID
-- committing while the insert runs is not in: the trigger leaseq_purged_token
-- (schema.sql) corrects it (rule 21 in docs/rules.md).
-- The instant also takes the advisory lock $10 for the insert's transaction,
-- when $10 is not NULL: the mark by which a call whose answer was cut short
-- waits for its statement to end (mark_wait.sql). The subquery that reads it
-- is run once, not folded into the insert, as it is volatile. No other
-- transaction holds the random key, so the lock is always taken; were it not,
-- the instant would be NULL and the insert would fail rather than write
-- unmarked.
-- PostgreSQL: due_at and ready are worked out here from the instant, where
-- SQLite is given due_at; ON CONFLICT where SQLite fails on the unique key.
-- args: $1 queue, $2 id, $3 qty, $4 payload, $5 max attempts, $6 deadline, $7 run at, $8 priority, $9 now (NULL: the server's clock), $10 mark (NULL: none), $11 kind
-- returns: seq (no row: the ID is taken)
-- index: leaseq_jobs_queue_id_key, leaseq_purged_pkey
INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
    due_at, ready, token, created_at, updated_at, kind)
SELECT $1, $2, $3, $4, 'pending', $5, $6, $7, $8,
    greatest(coalesce($7, t.now), t.now), CASE WHEN coalesce($7, t.now) <= t.now THEN 1 ELSE 0 END,
    coalesce((SELECT token FROM leaseq_purged WHERE queue = $1 AND id = $2), 0), t.now, t.now, $11
FROM (SELECT CASE WHEN pg_try_advisory_xact_lock($10::bigint) IS NOT FALSE THEN coalesce($9::bigint, leaseq_now()) END AS now) t
ON CONFLICT (queue, id) DO NOTHING
RETURNING seq
