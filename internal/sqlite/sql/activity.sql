-- A queue's history since ?2 in one statement, so that all its counts come
-- from one snapshot, from index entries only: jobs done and quarantined per
-- minute, and of those the ones enqueued since ?2 (a job finishes after it
-- is enqueued, so every finished job enqueued since ?2 is in the same
-- range), by enqueue minute: two passes of the range of
-- leaseq_jobs_finished since ?2; the pending and leased jobs, counted, and
-- those enqueued since ?2 by enqueue minute: two passes of their ranges of
-- leaseq_jobs_status. So its cost grows with the jobs finished since ?2 and
-- with the jobs waiting or held now, never with the done rows of before ?2.
-- Counting the enqueues from these two ranges, rather than from an index of
-- every job by enqueue time, spares every Enqueue a write to one more
-- index. Minutes are the integer division of Unix milliseconds by 60000.
-- args: ?1 queue, ?2 since (a minute's start)
-- returns: kind, minute, count
-- index: leaseq_jobs_finished, leaseq_jobs_status

SELECT status, updated_at / 60000, count(*) FROM leaseq_jobs
WHERE queue = ?1 AND status IN ('done', 'quarantined') AND updated_at >= ?2
GROUP BY status, updated_at / 60000
UNION ALL
SELECT 'enqueued', created_at / 60000, count(*) FROM leaseq_jobs
WHERE queue = ?1 AND status IN ('done', 'quarantined') AND updated_at >= ?2 AND created_at >= ?2
GROUP BY created_at / 60000
UNION ALL
SELECT 'enqueued', created_at / 60000, count(*) FROM leaseq_jobs
WHERE queue = ?1 AND status IN ('pending', 'leased') AND created_at >= ?2
GROUP BY created_at / 60000
UNION ALL
SELECT 'depth', 0, count(*) FROM leaseq_jobs WHERE queue = ?1 AND status IN ('pending', 'leased')
