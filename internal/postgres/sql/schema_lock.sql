-- Makes migrations from several hosts at once take turns, for the rest of
-- the migration's transaction: the first creates or upgrades the schema, the
-- others find it done.
-- PostgreSQL only: SQLite's BEGIN IMMEDIATE takes the file's write lock.
-- args: $1 the lock's key (schemaLock)
SELECT pg_advisory_xact_lock($1::bigint)
