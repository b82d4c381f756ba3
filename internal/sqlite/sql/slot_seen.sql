-- Whether a Periodic was seen before (rule 53): whether a job of the
-- queue, or a purged one, has an ID in the range of its prefix "Name@"
-- (?2 to ?3, the prefix with its last byte raised: BINARY order), a
-- range of the unique index and of leaseq_purged's PRIMARY KEY.
-- args: ?1 queue, ?2 prefix, ?3 the end of the prefix's range
-- returns: seen
-- index: sqlite_autoindex_leaseq_jobs_1, PRIMARY

SELECT EXISTS (SELECT 1 FROM leaseq_jobs WHERE queue = ?1 AND id >= ?2 AND id < ?3)
    OR EXISTS (SELECT 1 FROM leaseq_purged WHERE queue = ?1 AND id >= ?2 AND id < ?3)
