-- Writes the job of a periodic slot (rule 53), as insert_many.sql writes
-- one, unless the queue has its ID (ON CONFLICT: nothing) or had it and
-- purged it (leaseq_purged): one job per slot, also after it was purged.
-- Its token starts at 0, as a job never purged does.
-- PostgreSQL: due and ready come from now ($9, or the server's clock),
-- as in insert_many.sql.
-- args: $1 queue, $2 id, $3 qty, $4 payload, $5 max_attempts, $6 deadline, $7 run_at, $8 priority, $9 now (NULL: the server's clock)
-- index: leaseq_jobs_queue_id_key, leaseq_purged_pkey
INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
    due_at, ready, token, created_at, updated_at)
SELECT $1, $2, $3, $4, 'pending', $5, $6, $7::bigint, $8,
    greatest(coalesce($7::bigint, t.now), t.now), CASE WHEN coalesce($7::bigint, t.now) <= t.now THEN 1 ELSE 0 END, 0, t.now, t.now
FROM (SELECT coalesce($9::bigint, leaseq_now()) AS now) t
WHERE NOT EXISTS (SELECT FROM leaseq_purged p WHERE p.queue = $1 AND p.id = $2)
ON CONFLICT (queue, id) DO NOTHING
