-- The first statement of a purge chunk: remembers, in leaseq_purged, the
-- ID and last token of each job of the chunk, so that an ID enqueued again
-- continues where the purged job's tokens ended. A job never claimed
-- (token 0) is remembered too: a periodic slot's job cancelled before its
-- first claim, then purged, must keep its slot from being enqueued again
-- (rule 53); a plain enqueue of its ID reads token 0, as without it. The chunk
-- is the next ?4 jobs of status ?2 whose last change is before ?3, from
-- leaseq_jobs_finished; the IN repeats the index's condition, which a bound
-- ?2 alone cannot show the planner. purge then deletes the same rows:
-- under the write lock nothing changes leaseq_jobs between the two.
-- args: ?1 queue, ?2 status, ?3 before, ?4 chunk size
-- index: leaseq_jobs_finished
-- SQLite: two statements in one transaction, where PostgreSQL has one.

INSERT INTO leaseq_purged (queue, id, token)
SELECT queue, id, token FROM leaseq_jobs WHERE seq IN (SELECT seq FROM leaseq_jobs
    WHERE queue = ?1 AND status = ?2 AND status IN ('done', 'quarantined') AND updated_at < ?3
    ORDER BY updated_at LIMIT ?4)
ON CONFLICT (queue, id) DO UPDATE SET token = excluded.token
