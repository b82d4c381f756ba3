-- Creates the table that holds the schema version, so that the migration can
-- read the version under schema_lock.sql.
-- PostgreSQL only.
CREATE TABLE IF NOT EXISTS leaseq_schema (version integer NOT NULL)
