-- Whether a Periodic was seen before (rule 53): whether a job of the
-- queue, or a purged one, has an ID that starts with its prefix "Name@".
-- The range $2 to $3 (the prefix with its last byte raised) keeps the
-- read to a range of the unique index; starts_with decides, whatever the
-- database's collation makes of the range: a slot's ID is the prefix and
-- a digit, which every collation sorts after the prefix and before a
-- letter.
-- args: $1 queue, $2 prefix, $3 the end of the prefix's range
-- returns: seen
-- index: leaseq_jobs_queue_id_key, leaseq_purged_pkey
SELECT EXISTS (SELECT FROM leaseq_jobs WHERE queue = $1 AND id >= $2 AND id < $3 AND starts_with(id, $2))
    OR EXISTS (SELECT FROM leaseq_purged WHERE queue = $1 AND id >= $2 AND id < $3 AND starts_with(id, $2))
