-- FinishBatch on the server's clock as one statement at one instant, which it
-- reads itself: each claim of the arrays fenced on its own, as finish.sql
-- fences one (the same conditions on j, with the claim's ID, owner and token
-- from c and now from t). A row is updated once however often the batch
-- names its claim.
-- PostgreSQL only: SQLite runs finish.sql once per claim in one transaction.
-- args: $1 queue, $2 now (NULL: the server's clock), $3 ids, $4 owners, $5 tokens
-- returns: id, owner, token, lease_until
-- index: leaseq_jobs_queue_id_key
-- fenced
UPDATE leaseq_jobs j SET status = 'done', ready = 0, updated_at = t.now
FROM (SELECT coalesce($2::bigint, leaseq_now()) AS now) t,
     unnest($3::text[], $4::text[], $5::bigint[]) AS c(id, owner, token)
WHERE j.queue = $1 AND j.id = c.id AND j.owner = c.owner AND j.token = c.token AND j.status = 'leased'
  AND j.lease_until > t.now AND (j.deadline IS NULL OR j.deadline > t.now)
RETURNING j.id, j.owner, j.token, j.lease_until
