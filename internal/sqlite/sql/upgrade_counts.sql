-- Fills leaseq_counts for a database written before schema version 3: the
-- only time the done and quarantined jobs are counted by reading them. The
-- last step of every upgrade.
-- SQLite only.

INSERT INTO leaseq_counts (queue, status, n)
SELECT queue, status, count(*) FROM leaseq_jobs WHERE status IN ('done', 'quarantined') GROUP BY queue, status
