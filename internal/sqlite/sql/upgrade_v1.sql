-- The first step of the upgrade from schema version 1 (one queue, no
-- delays or priorities), several statements. SQLite cannot add a UNIQUE
-- (queue, id) constraint to a table, so the table is rebuilt: the old
-- indexes are dropped (version 2 reuses some of their names) and the old
-- table set aside; then the schema script creates the new one, and
-- upgrade_v1_copy fills it.
-- SQLite only: PostgreSQL never had a version 1.

DROP INDEX IF EXISTS leaseq_jobs_pending;
DROP INDEX IF EXISTS leaseq_jobs_leased;
DROP INDEX IF EXISTS leaseq_jobs_doomed;
DROP INDEX IF EXISTS leaseq_jobs_pending_deadline;
ALTER TABLE leaseq_jobs RENAME TO leaseq_jobs_v1;
