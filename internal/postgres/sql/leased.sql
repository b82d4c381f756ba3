-- The ID and token of every job of the queue $1 leased to $2 (rule 56 in
-- docs/rules.md): a Work pool reads them after a Cancel's notification, to
-- end at once the handler of a job that was taken from it.
-- args: $1 queue, $2 owner
-- returns: id, token
-- index: leaseq_jobs_status
SELECT id, token FROM leaseq_jobs WHERE queue = $1 AND status = 'leased' AND owner = $2
