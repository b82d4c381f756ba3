-- Tells other processes that the queue $2 changed (rule 56 in
-- docs/rules.md): a notification on the channel $1 whose payload is the
-- queue's name. Sent on its own, after the change committed, by one
-- sender per engine that gathers the changes made meanwhile, so that
-- NOTIFY's lock at commit never serializes the queue's own commits.
-- args: $1 channel, $2 queue
-- returns: nothing of use
-- PostgreSQL only: SQLite's pools watch the file instead.
SELECT pg_notify($1, $2)
