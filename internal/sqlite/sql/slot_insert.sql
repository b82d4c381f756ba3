-- Writes the job of a periodic slot (rule 53), as insert.sql writes one,
-- unless the queue has its ID (ON CONFLICT: nothing) or had it and purged
-- it (leaseq_purged, which remembers every purged ID, a job cancelled
-- before its first claim too): one job per slot, also after it was
-- cancelled or purged. Its token starts at 0, as a job never purged does.
-- slot_paused has read, under the same write lock, that the queue is not
-- paused.
-- args: ?1 queue, ?2 id, ?3 qty, ?4 payload, ?5 max_attempts, ?6 deadline, ?7 run_at, ?8 priority, ?9 due, ?10 now (the enqueue time), ?11 kind

INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
    due_at, ready, token, created_at, updated_at, kind)
SELECT ?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7, ?8, ?9, ?9 <= ?10, 0, ?10, ?10, ?11
WHERE NOT EXISTS (SELECT 1 FROM leaseq_purged WHERE queue = ?1 AND id = ?2)
ON CONFLICT (queue, id) DO NOTHING
