-- Counts the queue's pending and leased jobs, and of those claimable at ?2
-- (as in claim) how many and since when, in one pass of their ranges of
-- leaseq_jobs_status (grouping by status alone needs no sorting); the done
-- and quarantined ones it reads from leaseq_counts. One statement, so one
-- snapshot. A last row, status 'paused', counts the queue's row of
-- leaseq_paused (rule 54): 1 while it is paused.
-- args: ?1 queue, ?2 now
-- returns: status (or paused), count, claimable count, earliest claimable due_at
-- index: leaseq_jobs_status
-- PostgreSQL: its leaseq_counts is sharded, and the sum adds the shards.

SELECT status, count(*), sum(CASE WHEN (due_at <= ?2 OR status = 'pending' AND coalesce(run_at, ?2) <= ?2) THEN 1 ELSE 0 END), min(CASE WHEN (due_at <= ?2 OR status = 'pending' AND coalesce(run_at, ?2) <= ?2) THEN due_at END)
FROM leaseq_jobs WHERE queue = ?1 AND status IN ('pending', 'leased') GROUP BY status
UNION ALL
SELECT status, sum(n), 0, NULL FROM leaseq_counts WHERE queue = ?1 GROUP BY status
UNION ALL
SELECT 'paused', count(*), 0, NULL FROM leaseq_paused WHERE queue = ?1
