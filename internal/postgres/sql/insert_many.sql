-- Writes a batch in one statement from arrays, in the batch's order, at one
-- instant and with the mark $10 as insert.sql does. A taken ID fails the
-- whole statement with a unique violation, so nothing of the batch is
-- written, and the batch needs no transaction of its own.
-- PostgreSQL only: SQLite runs insert.sql once per job in one transaction.
-- args: $1 queue, $2 now (NULL: the server's clock), $3 ids, $4 qtys, $5 payloads, $6 max attempts, $7 deadlines, $8 run ats, $9 priorities, $10 kinds, $11 mark
-- index: leaseq_jobs_queue_id_key, leaseq_purged_pkey
INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
    due_at, ready, token, created_at, updated_at, kind)
SELECT $1, u.id, u.qty, u.payload, 'pending', u.max_attempts, u.deadline, u.run_at, u.priority,
    greatest(coalesce(u.run_at, t.now), t.now), CASE WHEN coalesce(u.run_at, t.now) <= t.now THEN 1 ELSE 0 END,
    coalesce((SELECT p.token FROM leaseq_purged p WHERE p.queue = $1 AND p.id = u.id), 0), t.now, t.now, u.kind
FROM (SELECT CASE WHEN pg_try_advisory_xact_lock($11::bigint) IS NOT FALSE
        THEN coalesce($2::bigint, leaseq_now()) END AS now) t,
    unnest($3::text[], $4::bigint[], $5::bytea[], $6::integer[], $7::bigint[], $8::bigint[], $9::integer[], $10::text[])
    WITH ORDINALITY AS u(id, qty, payload, max_attempts, deadline, run_at, priority, kind, ord)
ORDER BY u.ord
