-- Records the job done, if the claim still holds it: the fence (rules 3,
-- 14 and 17-19 in docs/rules.md). The call changes the row only if the job is
-- leased by this very claim, in the same queue, with the same ID, owner and
-- token, and both the lease and the deadline are still running at now (at
-- now = lease_until the lease is over). Check and change are one UPDATE (a
-- lookup in the unique index on (queue, id)), so they cannot be separated; a
-- refused call matches no row and changes nothing. Every fenced statement
-- carries this WHERE word for word and returns the lease end it leaves.
-- PostgreSQL: now is $5, or the server's clock (leaseq_now()) when $5 is
-- NULL, where SQLite always gets the instant from the queue's clock.
-- args: $1 queue, $2 id, $3 owner, $4 token, $5 now (NULL: the server's clock, leaseq_now())
-- returns: lease_until
-- index: leaseq_jobs_queue_id_key
-- fenced
UPDATE leaseq_jobs SET status = 'done', ready = 0, updated_at = coalesce($5::bigint, leaseq_now())
WHERE queue = $1 AND id = $2 AND owner = $3 AND token = $4 AND status = 'leased'
  AND lease_until > coalesce($5::bigint, leaseq_now()) AND (deadline IS NULL OR deadline > coalesce($5::bigint, leaseq_now()))
RETURNING lease_until
