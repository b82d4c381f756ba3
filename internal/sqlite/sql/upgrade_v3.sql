-- The first step of the upgrade from schema version 3 (and of the one from
-- version 2, which lacks it too): the kind column of version 4 (rule 50 in
-- docs/rules.md), "" for none. Adding a column with a constant default
-- rewrites no row. The schema script, run next, creates the kind's index.
-- SQLite only: PostgreSQL's schema script adds the column if missing.

ALTER TABLE leaseq_jobs ADD COLUMN kind TEXT NOT NULL DEFAULT ''
