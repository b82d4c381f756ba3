-- Schema version 4 (rule 50 in docs/rules.md: jobs have a kind), two
-- statements, run after the schema script by the creation of a database
-- and by every upgrade: the kind column, "" for none, and the index that
-- List by kind reads. Adding a column with a constant default rewrites no
-- row. The index is partial: jobs without a kind, and their claims and
-- finishes, never touch it.

ALTER TABLE leaseq_jobs ADD COLUMN kind TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS leaseq_jobs_kind ON leaseq_jobs (queue, kind, status, seq) WHERE kind <> '';
