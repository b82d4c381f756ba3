-- SQLite's schema, version 4 (recorded in PRAGMA user_version): the
-- tables, indexes and triggers, several statements. The one copy: the
-- package embeds this file and hands it to the SQLite engine, which runs it
-- to create a database and in every upgrade (after the upgrade's own first
-- steps), so every statement is IF NOT EXISTS. PostgreSQL's schema is
-- internal/postgres/sql/schema.sql.
--
-- One row per job. Times are integer Unix milliseconds taken from the queue's
-- clock. Every index but the unique one on (queue, id) and the status index
-- is partial: each holds only the rows one statement may take, which is what
-- keeps the cost of a Claim flat however many done, quarantined, delayed or
-- leased rows pile up beside the claimable ones.

CREATE TABLE IF NOT EXISTS leaseq_jobs (
  -- Enqueue order. An alias of the rowid, so SQLite picks the next value from
  -- the end of the b-tree: no max(seq) scan on Enqueue.
  seq          INTEGER PRIMARY KEY,
  queue        TEXT    NOT NULL, -- Options.Name
  id           TEXT    NOT NULL,
  qty          INTEGER NOT NULL CHECK (qty >= 0),
  payload      BLOB    NOT NULL,
  status       TEXT    NOT NULL CHECK (status IN ('pending', 'leased', 'done', 'quarantined')),
  owner        TEXT    NOT NULL DEFAULT '',
  -- Fencing token: 0 before the first claim, +1 on every claim, never reused,
  -- not even by a job enqueued again after a purge (see leaseq_purged).
  token        INTEGER NOT NULL DEFAULT 0,
  attempts     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL CHECK (max_attempts > 0),
  lease_until  INTEGER,          -- NULL until the first claim
  deadline     INTEGER,          -- NULL: no deadline
  reason       TEXT    NOT NULL DEFAULT '',
  run_at       INTEGER,          -- Job.RunAt, or the end of a Release's delay; NULL: none
  priority     INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN -100 AND 100),
  -- When the job is or was due to become claimable: for a pending job
  -- max(enqueue or release time, run_at), for a leased one lease_until.
  due_at       INTEGER NOT NULL,
  -- 1 once the job is known to be claimable, which puts it in
  -- leaseq_jobs_ready. A job enqueued or released without delay is ready at
  -- once; a delayed job or a lease waits in leaseq_jobs_waiting until a Claim
  -- finds it due and sets this (the promote statement). Claim takes jobs only
  -- from leaseq_jobs_ready, so priority order is one index's order.
  ready        INTEGER NOT NULL DEFAULT 0 CHECK (ready IN (0, 1)),
  created_at   INTEGER NOT NULL, -- enqueue time
  updated_at   INTEGER NOT NULL, -- last change; for done and quarantined jobs, when they got there
  -- Job.Kind, "" for none (rule 50 in docs/rules.md). Last, where the
  -- upgrade from version 3 adds it (upgrade_v3), so that an upgraded table
  -- and a new one have the same columns in the same order.
  kind         TEXT    NOT NULL DEFAULT '',
  UNIQUE (queue, id)
);

-- The last token of every purged job, so that an ID enqueued again continues
-- where the purged job's tokens ended and no claim from before the purge can
-- ever match the new job (Purge).
CREATE TABLE IF NOT EXISTS leaseq_purged (
  queue TEXT    NOT NULL,
  id    TEXT    NOT NULL,
  token INTEGER NOT NULL,
  PRIMARY KEY (queue, id)
) WITHOUT ROWID;

-- Claimable jobs in the order Claim takes them: highest priority first, then
-- the one due earliest, then enqueue order (the rowid every index ends with).
CREATE INDEX IF NOT EXISTS leaseq_jobs_ready ON leaseq_jobs (queue, priority DESC, due_at)
  WHERE ready = 1;

-- Delayed jobs and leases, by the instant they become claimable. A Claim
-- promotes the due prefix to leaseq_jobs_ready; the rest is never visited.
CREATE INDEX IF NOT EXISTS leaseq_jobs_waiting ON leaseq_jobs (queue, due_at)
  WHERE ready = 0 AND status IN ('pending', 'leased');

-- Leased jobs that the quarantine sweep may have to take, keyed by the
-- instant from which it must: the lease end once the attempts are used up,
-- else the deadline (a lease never outlives its deadline, so a passed
-- deadline means an ended lease). Leases with attempts left and no deadline,
-- the usual case, are not in it: a pile of expired leases that are simply
-- waiting to be claimed again is never swept over on every Claim.
CREATE INDEX IF NOT EXISTS leaseq_jobs_doomed ON leaseq_jobs
  (queue, (CASE WHEN attempts >= max_attempts THEN lease_until ELSE deadline END))
  WHERE status = 'leased' AND (attempts >= max_attempts OR deadline IS NOT NULL);

-- Pending jobs with a deadline, so the quarantine sweep finds the ones whose
-- deadline passed without looking at the others.
CREATE INDEX IF NOT EXISTS leaseq_jobs_pending_deadline ON leaseq_jobs (queue, deadline)
  WHERE status = 'pending' AND deadline IS NOT NULL;

-- Jobs with a kind, for List by kind (rule 50). Partial: jobs without a
-- kind, and their claims and finishes, never touch it.
CREATE INDEX IF NOT EXISTS leaseq_jobs_kind ON leaseq_jobs (queue, kind, status, seq) WHERE kind <> '';

-- Every job by status in enqueue order: List's pages, and Stats' and
-- Activity's counts (due_at, run_at and created_at make it cover them, so
-- counting reads no table row).
CREATE INDEX IF NOT EXISTS leaseq_jobs_status ON leaseq_jobs (queue, status, seq, due_at, run_at, created_at);

-- Finished jobs by the time they finished, for Purge, and for Activity's
-- counts per minute (created_at makes it cover them).
CREATE INDEX IF NOT EXISTS leaseq_jobs_finished ON leaseq_jobs (queue, status, updated_at, created_at)
  WHERE status IN ('done', 'quarantined');

-- The number of done and quarantined jobs of each queue, kept by the two
-- triggers below, so that Stats counts them without reading them: those
-- rows pile up until purged, and a count that read them would cost more
-- with every finished job (rule 35 in docs/rules.md). Pending and
-- leased jobs are counted from leaseq_jobs_status; how many of them are due
-- depends on the instant Stats asks at.
CREATE TABLE IF NOT EXISTS leaseq_counts (
  queue  TEXT    NOT NULL,
  status TEXT    NOT NULL CHECK (status IN ('done', 'quarantined')),
  n      INTEGER NOT NULL,
  PRIMARY KEY (queue, status)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS leaseq_counts_update AFTER UPDATE OF status ON leaseq_jobs
WHEN old.status <> new.status
  AND (old.status IN ('done', 'quarantined') OR new.status IN ('done', 'quarantined'))
BEGIN
  UPDATE leaseq_counts SET n = n - 1 WHERE queue = old.queue AND status = old.status;
  INSERT INTO leaseq_counts (queue, status, n) SELECT new.queue, new.status, 1
    WHERE new.status IN ('done', 'quarantined')
    ON CONFLICT (queue, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS leaseq_counts_delete AFTER DELETE ON leaseq_jobs
WHEN old.status IN ('done', 'quarantined')
BEGIN
  UPDATE leaseq_counts SET n = n - 1 WHERE queue = old.queue AND status = old.status;
END;

-- Rule 54 (Pause): one row per paused queue, written by Pause and deleted
-- by Resume. Every claim path reads it (claim_idle, claim, next_due): while
-- a queue has its row, no process claims from it.
CREATE TABLE IF NOT EXISTS leaseq_paused (
  queue     TEXT    NOT NULL PRIMARY KEY,
  paused_at INTEGER NOT NULL
) WITHOUT ROWID;
