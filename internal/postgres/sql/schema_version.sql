-- Reads the schema version without writing: no table (SQLSTATE 42P01) or no
-- row is version 0, none yet.
-- PostgreSQL: a table of its own, where SQLite has PRAGMA user_version; the
-- numbers are the engine's own (SchemaCurrent).
-- returns: version
SELECT version FROM leaseq_schema
