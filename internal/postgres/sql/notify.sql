-- Tells other processes that a queue changed (rule 56 in docs/rules.md): a
-- notification on the channel $1 whose payload $2 is "w" (a job may be
-- claimable) or "c" (a running job may have been taken) and the queue's
-- name. Sent on its own, after the change committed, by one
-- sender per engine that gathers the changes made meanwhile, so that
-- NOTIFY's lock at commit never serializes the queue's own commits.
-- args: $1 channel, $2 payload
-- returns: nothing of use
-- PostgreSQL only: SQLite's pools watch the file instead.
SELECT pg_notify($1, $2)
