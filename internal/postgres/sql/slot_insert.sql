-- Writes the job of a periodic slot (rule 53), as insert_many.sql writes
-- one, unless the queue is paused (leaseq_paused: a paused queue gets no
-- slot's job, rule 54), has its ID (ON CONFLICT: nothing) or had it and
-- purged it (leaseq_purged, which remembers every purged ID, a job
-- cancelled before its first claim too): one job per slot, also after it
-- was cancelled or purged. Its token starts at 0, as a job never purged
-- does. It answers with the new row's seq (NULL: nothing written) and
-- whether the queue is paused. A purge of the ID that commits while the
-- statement runs is not in its snapshot: slot_purged.sql reads
-- leaseq_purged again once the insert is done.
-- PostgreSQL: due and ready come from now ($9, or the server's clock),
-- as in insert_many.sql; the pause is read in the same statement, where
-- SQLite reads it first under its write lock (slot_paused.sql).
-- args: $1 queue, $2 id, $3 qty, $4 payload, $5 max_attempts, $6 deadline, $7 run_at, $8 priority, $9 now (NULL: the server's clock), $10 kind
-- returns: seq, paused
-- index: leaseq_jobs_queue_id_key, leaseq_purged_pkey
WITH t AS (
    SELECT coalesce($9::bigint, leaseq_now()) AS now, EXISTS (SELECT FROM leaseq_paused WHERE queue = $1) AS paused),
written AS (
    INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
        due_at, ready, token, created_at, updated_at, kind)
    SELECT $1, $2, $3, $4, 'pending', $5, $6, $7::bigint, $8,
        greatest(coalesce($7::bigint, t.now), t.now), CASE WHEN coalesce($7::bigint, t.now) <= t.now THEN 1 ELSE 0 END, 0,
        t.now, t.now, $10
    FROM t
    WHERE NOT t.paused AND NOT EXISTS (SELECT FROM leaseq_purged p WHERE p.queue = $1 AND p.id = $2)
    ON CONFLICT (queue, id) DO NOTHING
    RETURNING seq)
SELECT (SELECT seq FROM written), paused FROM t
