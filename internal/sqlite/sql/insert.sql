-- Writes one job. A job whose ID was purged starts from the purged job's
-- last token (leaseq_purged); any other from 0. A job due at once goes
-- straight into leaseq_jobs_ready. A taken (queue, id) fails the unique
-- constraint, which is the call's ErrDuplicate.
-- args: ?1 queue, ?2 id, ?3 qty, ?4 payload, ?5 max_attempts, ?6 deadline, ?7 run_at, ?8 priority, ?9 due, ?10 now (the enqueue time), ?11 kind

INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
    due_at, ready, token, created_at, updated_at, kind)
VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7, ?8, ?9, ?9 <= ?10,
    coalesce((SELECT token FROM leaseq_purged WHERE queue = ?1 AND id = ?2), 0), ?10, ?10, ?11)
