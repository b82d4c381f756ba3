-- Checks a claim's fence without changing the row: FinishTx's look before
-- it runs the service's function (rule 46 in docs/rules.md), so that a
-- function is not run at all for a claim the Finish after it would refuse
-- already. The Finish itself (finish.sql) judges the fence again after the
-- function, at the clock read then. The fence: see finish.sql.
-- fenced
-- args: ?1 queue, ?2 id, ?3 owner, ?4 token, ?5 now
-- returns: lease_until (no row: the fence refuses)
-- index: sqlite_autoindex_leaseq_jobs_1

SELECT lease_until FROM leaseq_jobs
WHERE queue = ?1 AND id = ?2 AND owner = ?3 AND token = ?4 AND status = 'leased'
  AND lease_until > ?5 AND (deadline IS NULL OR deadline > ?5)
