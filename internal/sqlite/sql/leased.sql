-- The ID and token of every job of the queue ?1 leased to ?2 (rule 56 in
-- docs/rules.md): a Work pool reads them after another process's change,
-- to end at once the handler of a job that was taken from it. One range of
-- leaseq_jobs_status, the queue's leased jobs, whatever the number of done
-- ones.
-- args: ?1 queue, ?2 owner
-- returns: id, token
-- index: leaseq_jobs_status

SELECT id, token FROM leaseq_jobs WHERE queue = ?1 AND status = 'leased' AND owner = ?2
