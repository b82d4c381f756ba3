-- Counts the jobs of insert_many.sql's arrays (same arguments) that are in
-- the table as enqueued: same ID and fields, and enqueued at the instant
-- given, unless that was the server's clock. It tells an enqueue whose answer
-- was cut short whether it was written.
-- PostgreSQL only.
-- args: $1 queue, $2 now (NULL: the server's clock), $3 ids, $4 qtys, $5 payloads, $6 max attempts, $7 deadlines, $8 run ats, $9 priorities, $10 kinds
-- returns: count
-- index: leaseq_jobs_queue_id_key
SELECT count(*) FROM leaseq_jobs j,
    unnest($3::text[], $4::bigint[], $5::bytea[], $6::integer[], $7::bigint[], $8::bigint[], $9::integer[], $10::text[])
    AS u(id, qty, payload, max_attempts, deadline, run_at, priority, kind)
WHERE j.queue = $1 AND j.id = u.id AND j.qty = u.qty AND j.payload = u.payload AND j.max_attempts = u.max_attempts
  AND j.deadline IS NOT DISTINCT FROM u.deadline AND j.run_at IS NOT DISTINCT FROM u.run_at
  AND j.priority = u.priority AND j.kind = u.kind AND ($2::bigint IS NULL OR j.created_at = $2)
