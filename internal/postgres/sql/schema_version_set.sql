-- Writes the schema version a migration leaves, as the one row of
-- leaseq_schema: the DELETE and the INSERT share one snapshot, so the old
-- rows go and only the new one stays.
-- PostgreSQL: a table of its own, where SQLite sets PRAGMA user_version.
-- args: $1 version
WITH cleared AS (DELETE FROM leaseq_schema)
INSERT INTO leaseq_schema (version) VALUES ($1)
