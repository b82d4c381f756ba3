-- Waits until the statement marked with the advisory lock $1 (insert.sql)
-- has ended, committed or not, so that insert_written.sql, read after it in
-- a snapshot of its own, sees what the statement did.
-- PostgreSQL only.
-- args: $1 mark
SELECT pg_advisory_xact_lock_shared($1)
