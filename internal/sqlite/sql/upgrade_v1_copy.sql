-- The last step of the upgrade from schema version 1, two statements: the
-- rows set aside by upgrade_v1 are copied into the queue "default"
-- (leaseq's DefaultName), keeping every token and attempt count, and the
-- old table is dropped. Pending jobs copy as ready, leases as waiting for
-- their lease end, as version 2 would have written them.
-- SQLite only.

INSERT INTO leaseq_jobs (seq, queue, id, qty, payload, status, owner, token, attempts, max_attempts,
	lease_until, deadline, reason, run_at, priority, due_at, ready, created_at, updated_at)
SELECT seq, 'default', id, qty, payload, status, owner, token, attempts, max_attempts,
	lease_until, deadline, reason, NULL, 0,
	CASE status WHEN 'leased' THEN lease_until ELSE created_at END,
	CASE status WHEN 'pending' THEN 1 ELSE 0 END,
	created_at, updated_at
FROM leaseq_jobs_v1;
DROP TABLE leaseq_jobs_v1;
