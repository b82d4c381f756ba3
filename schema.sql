-- leaseq schema, version 1 (recorded in PRAGMA user_version).
--
-- One row per job. Times are integer Unix milliseconds taken from the queue's
-- clock. The partial indexes are what keep Claim's cost flat: every query
-- Claim runs is a range scan over rows that are pending, or leased, and never
-- touches done or quarantined rows, however many of them pile up.

CREATE TABLE IF NOT EXISTS leaseq_jobs (
  -- Enqueue order. An alias of the rowid, so SQLite picks the next value from
  -- the end of the b-tree: no max(seq) scan on Enqueue.
  seq          INTEGER PRIMARY KEY,
  id           TEXT    NOT NULL UNIQUE,
  qty          INTEGER NOT NULL CHECK (qty >= 0),
  payload      BLOB    NOT NULL,
  status       TEXT    NOT NULL CHECK (status IN ('pending', 'leased', 'done', 'quarantined')),
  owner        TEXT    NOT NULL DEFAULT '',
  -- Fencing token: 0 before the first claim, +1 on every claim, never reused.
  token        INTEGER NOT NULL DEFAULT 0,
  attempts     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL CHECK (max_attempts > 0),
  lease_until  INTEGER,          -- NULL until the first claim
  deadline     INTEGER,          -- NULL: no deadline
  reason       TEXT    NOT NULL DEFAULT '',
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
);

-- Pending jobs in enqueue order: the first half of Claim's candidates.
CREATE INDEX IF NOT EXISTS leaseq_jobs_pending ON leaseq_jobs (seq)
  WHERE status = 'pending';

-- Leases by end time: expired leases (the second half of Claim's candidates)
-- are a prefix of this index, live leases are never visited.
CREATE INDEX IF NOT EXISTS leaseq_jobs_leased ON leaseq_jobs (lease_until)
  WHERE status = 'leased';

-- Leased jobs that the quarantine sweep may have to take, keyed by the
-- instant from which it must: the lease end once the attempts are used up,
-- else the deadline (a lease never outlives its deadline, so a passed
-- deadline means an ended lease). Leases with attempts left and no deadline,
-- the usual case, are not in it: a pile of expired leases that are simply
-- waiting to be claimed again is never swept over on every Claim.
CREATE INDEX IF NOT EXISTS leaseq_jobs_doomed ON leaseq_jobs
  ((CASE WHEN attempts >= max_attempts THEN lease_until ELSE deadline END))
  WHERE status = 'leased' AND (attempts >= max_attempts OR deadline IS NOT NULL);

-- Pending jobs with a deadline, so the quarantine sweep finds the ones whose
-- deadline passed without looking at the others.
CREATE INDEX IF NOT EXISTS leaseq_jobs_pending_deadline ON leaseq_jobs (deadline)
  WHERE status = 'pending' AND deadline IS NOT NULL;
