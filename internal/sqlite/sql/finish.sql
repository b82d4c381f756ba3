-- Records the job of a claim done.
-- The fence (rules 3, 14 and 17-19 in docs/rules.md): the row changes only
-- if the job is leased by this very claim, in the same queue, with the same
-- ID, owner and token, and both the lease and the deadline are still running
-- at now (at now = lease_until the lease is over). One UPDATE with this
-- WHERE, a lookup in the unique index on (queue, id), so the check and the
-- change cannot be separated; a refused call matches no row. Every fenced
-- statement returns the lease end it leaves, which only Extend reports.
-- fenced
-- args: ?1 queue, ?2 id, ?3 owner, ?4 token, ?5 now
-- returns: lease_until
-- index: sqlite_autoindex_leaseq_jobs_1

UPDATE leaseq_jobs SET status = 'done', ready = 0, updated_at = ?5
WHERE queue = ?1 AND id = ?2 AND owner = ?3 AND token = ?4 AND status = 'leased'
  AND lease_until > ?5 AND (deadline IS NULL OR deadline > ?5)
RETURNING lease_until
