-- The first step of the upgrade from schema version 2, two statements: it
-- drops the indexes that version 3 widens with created_at (for Activity),
-- so that the schema script creates them anew.
-- SQLite only.

DROP INDEX leaseq_jobs_status; DROP INDEX leaseq_jobs_finished;
