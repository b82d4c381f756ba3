-- The create script, version 9 (SchemaCurrent; the version is the row of
-- leaseq_schema, written by SchemaMigrate). It holds several statements,
-- split at semicolons outside $$-quoted bodies, run in one transaction under
-- schema_lock. Every version's script runs on any older schema, as it creates
-- what is missing and replaces every function and trigger.
-- PostgreSQL: the claim, its sweeps and the worker pools' step are functions
-- here (leaseq_claim, leaseq_sweep, leaseq_pool_step), where SQLite runs
-- its statements from the client; done and quarantined counts are kept by
-- triggers, sharded by backend.
-- The tables, columns and meanings are those of the SQLite engine's
-- schema.sql, so that one row means the same on both engines; times are
-- bigint Unix milliseconds from the queue's clock (the server's clock when the
-- Queue has no Clock of its own: leaseq_now). Every statement of the queue is
-- a range scan of one of these indexes (each statement's header names its
-- own); the root's postgres_plan_test.go checks it with EXPLAIN.

CREATE TABLE IF NOT EXISTS leaseq_jobs (
  seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- enqueue order
  queue        text     NOT NULL,
  id           text     NOT NULL,
  qty          bigint   NOT NULL CHECK (qty >= 0),
  payload      bytea    NOT NULL,
  status       text     NOT NULL CHECK (status IN ('pending', 'leased', 'done', 'quarantined')),
  owner        text     NOT NULL DEFAULT '',
  token        bigint   NOT NULL DEFAULT 0,
  attempts     integer  NOT NULL DEFAULT 0,
  max_attempts integer  NOT NULL CHECK (max_attempts > 0),
  lease_until  bigint,
  deadline     bigint,
  reason       text     NOT NULL DEFAULT '',
  run_at       bigint,
  priority     integer  NOT NULL DEFAULT 0 CHECK (priority BETWEEN -100 AND 100),
  due_at       bigint   NOT NULL,
  ready        smallint NOT NULL DEFAULT 0 CHECK (ready IN (0, 1)),
  created_at   bigint   NOT NULL,
  updated_at   bigint   NOT NULL,
  UNIQUE (queue, id)
);

CREATE TABLE IF NOT EXISTS leaseq_purged (
  queue text   NOT NULL,
  id    text   NOT NULL,
  token bigint NOT NULL,
  PRIMARY KEY (queue, id)
);

-- The indexes of the SQLite engine's schema.sql, for the same statements;
-- see there for why each is partial.
CREATE INDEX IF NOT EXISTS leaseq_jobs_ready ON leaseq_jobs (queue, priority DESC, due_at, seq)
  WHERE ready = 1;
CREATE INDEX IF NOT EXISTS leaseq_jobs_waiting ON leaseq_jobs (queue, due_at)
  WHERE ready = 0 AND status IN ('pending', 'leased');
CREATE INDEX IF NOT EXISTS leaseq_jobs_doomed ON leaseq_jobs
  (queue, (CASE WHEN attempts >= max_attempts THEN lease_until ELSE deadline END))
  WHERE status = 'leased' AND (attempts >= max_attempts OR deadline IS NOT NULL);
CREATE INDEX IF NOT EXISTS leaseq_jobs_pending_deadline ON leaseq_jobs (queue, deadline)
  WHERE status = 'pending' AND deadline IS NOT NULL;
CREATE INDEX IF NOT EXISTS leaseq_jobs_status ON leaseq_jobs (queue, status, seq) INCLUDE (due_at, run_at, created_at);
CREATE INDEX IF NOT EXISTS leaseq_jobs_finished ON leaseq_jobs (queue, status, updated_at) INCLUDE (created_at)
  WHERE status IN ('done', 'quarantined');

-- leaseq_purged_token keeps the fence of a purged ID enqueued again
-- (rule 21 in docs/rules.md) when the enqueue races the purge. The
-- insert reads leaseq_purged on the snapshot its statement took when it
-- began; a purge that commits after that, its deletion of the old row
-- included, is not in it. The insert then finds the old row's index entry,
-- waits for the purge to commit (or sees it committed), and goes on with the
-- token it read: the old token forgotten. This trigger runs once the
-- statement's rows are in the unique index, that is after any purge of
-- their IDs has committed, and its statements take snapshots of their own
-- (READ COMMITTED), which see that purge's leaseq_purged row: it raises the
-- token of each new row to the remembered one. Nothing else can see or
-- change the new rows before the statement ends, and in the usual case
-- (no race) the insert's own read was right and nothing is updated.
-- In a caller's REPEATABLE READ or SERIALIZABLE transaction (EnqueueTx)
-- every statement reads the transaction's snapshot, so there a purge
-- committed after it cannot be read; but then the purged row is still in
-- that snapshot, which is how the trigger tells, and it fails the insert as
-- a serialization failure, for the caller to run the transaction again.
-- Every insert pays for it, so the usual case is one read: whether any new
-- row's token is below the one remembered for its ID; only then does it
-- update (version 7). An UPDATE of leaseq_jobs opens every index of the
-- table even when it changes no row: version 6's trigger, which always ran
-- one, took a sixth of an Enqueue's server time, this one a tenth. Its plans are made once per session, for the first
-- statement's rows and tables' sizes, and must stay index probes per
-- inserted row whatever those were: a hash join would read the whole of
-- leaseq_purged on every insert. Each probe is a scalar subquery, which
-- the planner never turns into a join, so no planner settings are needed
-- (version 6 set three, which every call paid to set and restore).
CREATE OR REPLACE FUNCTION leaseq_purged_token() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    IF EXISTS (SELECT FROM inserted i
               WHERE (SELECT j.seq FROM leaseq_jobs j WHERE j.queue = i.queue AND j.id = i.id AND j.seq <> i.seq LIMIT 1) IS NOT NULL) THEN
      RAISE EXCEPTION 'leaseq: a job enqueued while its ID was purged by a transaction this one cannot see'
        USING ERRCODE = 'serialization_failure', HINT = 'Run the transaction again.';
    END IF;
  END IF;
  IF EXISTS (SELECT FROM inserted i
             WHERE (SELECT p.token FROM leaseq_purged p WHERE p.queue = i.queue AND p.id = i.id) > i.token) THEN
    UPDATE leaseq_jobs j SET token = (SELECT p.token FROM leaseq_purged p WHERE p.queue = j.queue AND p.id = j.id)
    WHERE j.seq = ANY (ARRAY(SELECT i.seq FROM inserted i
                             WHERE (SELECT p.token FROM leaseq_purged p WHERE p.queue = i.queue AND p.id = i.id) > i.token));
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER leaseq_purged_token AFTER INSERT ON leaseq_jobs
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION leaseq_purged_token();

-- "Now" on the server's clock, in Unix milliseconds, truncated like every
-- instant the queue stores (rule 8 in docs/rules.md). It reads
-- statement_timestamp(), which is fixed for the whole statement, so every
-- comparison of one statement — and of the claim function, which runs as one
-- statement — sees the same instant, and hosts whose clocks disagree still
-- agree on when a lease ends (rule 40).
CREATE OR REPLACE FUNCTION leaseq_now() RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint $$;

-- leaseq_claim is a claim on PostgreSQL: the quarantine sweeps, the
-- promotion of due rows into leaseq_jobs_ready (leaseq_sweep), and the claim
-- of up to p_max jobs (leaseq_claim_jobs), as one statement at one instant
-- (p_now, or the server's clock when NULL); a pool step runs it. A claimer never waits for rows another transaction holds (rule 39 in
-- docs/rules.md), whether another claimer is taking them or a worker is
-- finishing one, and two claimers never get one job, because a row is
-- updated only by the transaction that locked it.
--
-- FOR UPDATE SKIP LOCKED alone does not keep the first promise. A row
-- version the statement read may be updated by a transaction that commits
-- just as the lock is taken; the server then follows the row's update
-- chain and waits, whatever the wait policy, for any transaction that holds
-- the newer version ("while locking updated version … of tuple": PostgreSQL
-- 15's heap_lock_updated_tuple). On a queue's rows that is another claimer:
-- the claimer of the newer version, or one that followed the same chain and
-- holds that version locked although it did not take it. So no two of the
-- steps of two claims ever lock one row at once:
--   * the claim takes a row only once it holds leaseq_take on the row's
--     seq, a try of an advisory lock that lasts until its transaction ends.
--     A claimer that locked or updated the row held it, so the row's every
--     version another claimer made is committed by the time this one gets
--     it (locks are released after the commit is visible), and the lock
--     then skips a row held by anyone else;
--   * the sweeps and the promotion run in one transaction of the queue at
--     a time, the one that gets leaseq_sweeper; the others skip them this
--     time (the sweeper commits what it moved, and a claim refuses what a
--     sweep would have quarantined). They take only rows no claim may take: jobs
--     whose attempts are used up or whose deadline passed, and rows of
--     leaseq_jobs_waiting (ready = 0), whose promotion is limited to jobs
--     a claim may take, so that it does not race the sweeps either.
-- What remains is a row updated in one moment by two of the other calls
-- (say, an Extend and a Finish of one lease, or a Finish and a Purge) as a
-- claimer reads it, or a deadline passing between two claims' instants.
-- The advisory locks are held in the server's shared lock table, one per
-- job a claim takes or finds held (max_locks_per_transaction bounds how
-- many all transactions hold at once), and the sweeps take none.
-- Each statement picks its rows in a subquery that ARRAY() runs first, so the
-- update finds them by primary key whatever the planner guesses of how many
-- there are.
-- Version 6 (rules 50 and 51 in docs/rules.md) returns the job's kind,
-- enqueue time, run_at and max_attempts from the claim functions, which changes their result
-- type: CREATE OR REPLACE cannot, so the older ones go first. The script
-- runs under schema_lock, and only on an older schema.
DROP FUNCTION IF EXISTS leaseq_pool_step(text, text[], text[], bigint[], text[], bigint[], integer[]);
DROP FUNCTION IF EXISTS leaseq_claim(text, text, bigint, bigint, integer);
DROP FUNCTION IF EXISTS leaseq_claim_jobs(text, text, bigint, bigint, integer);

CREATE OR REPLACE FUNCTION leaseq_claim(p_queue text, p_owner text, p_now bigint, p_lease bigint, p_max integer)
RETURNS TABLE (seq bigint, id text, qty bigint, payload bytea, token bigint, attempts integer,
               lease_until bigint, deadline bigint, priority integer, kind text, created_at bigint, run_at bigint,
               max_attempts integer)
LANGUAGE plpgsql AS $$
DECLARE
  t bigint := coalesce(p_now, leaseq_now());
BEGIN
  PERFORM leaseq_sweep(p_queue, t);
  RETURN QUERY SELECT * FROM leaseq_claim_jobs(p_queue, p_owner, t, p_lease, p_max);
END $$;

-- leaseq_claim_jobs is the claim of leaseq_claim without the sweeps: Claim
-- runs leaseq_sweep as a statement of its own first, committed at once,
-- so that the sweeper's lock is never held while the server waits for a
-- client's COMMIT (a client that stalls there would stop every other
-- claim's sweeps for as long).
CREATE OR REPLACE FUNCTION leaseq_claim_jobs(p_queue text, p_owner text, p_now bigint, p_lease bigint, p_max integer)
RETURNS TABLE (seq bigint, id text, qty bigint, payload bytea, token bigint, attempts integer,
               lease_until bigint, deadline bigint, priority integer, kind text, created_at bigint, run_at bigint,
               max_attempts integer)
LANGUAGE plpgsql
-- Planned once per session, not on every call: planning its statements
-- cost more server time than running them. The ARRAY() forms keep the
-- generic plans to index ranges whatever the queue's shape.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  t bigint := coalesce(p_now, leaseq_now());
BEGIN
  IF EXISTS (SELECT 1 FROM leaseq_paused pq WHERE pq.queue = p_queue) THEN
    RETURN; -- a paused queue leases nothing (rule 54)
  END IF;
  RETURN QUERY
  UPDATE leaseq_jobs j
  SET status = 'leased', ready = 0, owner = p_owner, token = j.token + 1, attempts = j.attempts + 1,
      lease_until = CASE WHEN j.deadline IS NOT NULL AND j.deadline < t + p_lease THEN j.deadline ELSE t + p_lease END,
      due_at = CASE WHEN j.deadline IS NOT NULL AND j.deadline < t + p_lease THEN j.deadline ELSE t + p_lease END,
      updated_at = t
  WHERE j.seq = ANY (ARRAY(SELECT r.seq FROM leaseq_jobs r
                  WHERE r.queue = p_queue AND r.ready = 1
                    AND (r.due_at <= t OR r.status = 'pending' AND coalesce(r.run_at, t) <= t)
                    AND r.attempts < r.max_attempts AND (r.deadline IS NULL OR r.deadline > t)
                    AND leaseq_take(r.seq)
                  ORDER BY r.priority DESC, r.due_at, r.seq
                  LIMIT p_max
                  FOR UPDATE SKIP LOCKED))
  RETURNING j.seq, j.id, j.qty, j.payload, j.token, j.attempts, j.lease_until, j.deadline, j.priority,
            j.kind, j.created_at, j.run_at, j.max_attempts;
END $$;

-- leaseq_take tries the advisory lock of the job of seq for the claim that
-- is about to lock its row (leaseq_claim says why). Keys of two int4 are a
-- space of their own, apart from the one-bigint keys applications and
-- Migrate's lock use; the first is leaseq's ("lesq"), the second the
-- seq's low 32 bits: jobs 2^32 apart share a key, which at worst makes a
-- claim skip one of them while the other is being taken. Its cost keeps it
-- the last condition the planner checks, so the claim locks only rows it
-- would take.
CREATE OR REPLACE FUNCTION leaseq_take(p_seq bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE COST 1000 AS $$
BEGIN
  RETURN pg_try_advisory_xact_lock(1818588017, (p_seq & 4294967295)::bit(32)::integer);
END $$;

-- leaseq_sweeper tries the advisory lock that lets one claim of the queue
-- at a time run the sweeps (leaseq_claim says why); it lasts until the
-- claim's transaction ends. The second key is the queue's name hashed:
-- queues whose names share a hash share one sweeper.
CREATE OR REPLACE FUNCTION leaseq_sweeper(p_queue text) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
  SELECT pg_try_advisory_xact_lock(1818588023, hashtext(p_queue))
$$;

-- leaseq_sweep quarantines the jobs of the queue whose attempts are used up
-- or whose deadline passed at p_now (the server's clock when NULL), and
-- promotes into leaseq_jobs_ready the jobs that came due a claim may take:
-- when it gets leaseq_sweeper; otherwise another claim is sweeping, and it
-- does nothing, as on a paused queue. Every step still skips rows other
-- transactions hold.
-- Its generic plans guess a third of a range's rows due, whatever is: with
-- thousands of jobs scheduled or leased, that guess made the promotion's
-- scan of leaseq_jobs_waiting cost as much as reading the whole table, and
-- the planner took either (a scan of leaseq_jobs in one test run of many,
-- root's postgres_plan_test.go). enable_seqscan = off keeps it to the
-- index (version 8).
CREATE OR REPLACE FUNCTION leaseq_sweep(p_queue text, p_now bigint) RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
  t bigint := coalesce(p_now, leaseq_now());
BEGIN
  -- A paused queue is not swept either (rule 54): its claims write nothing.
  IF EXISTS (SELECT 1 FROM leaseq_paused pq WHERE pq.queue = p_queue) OR NOT leaseq_sweeper(p_queue) THEN
    RETURN;
  END IF;
  UPDATE leaseq_jobs j
  SET status = 'quarantined', ready = 0, updated_at = t,
      reason = CASE WHEN j.deadline IS NOT NULL AND j.deadline <= t
          THEN 'deadline passed at ' || j.deadline || ' (unix ms), ' || j.attempts || ' of ' || j.max_attempts || ' attempts used'
          ELSE 'max attempts reached: ' || j.attempts || ' of ' || j.max_attempts || ', last lease ended at ' || j.lease_until || ' (unix ms)'
      END
  WHERE j.seq = ANY (ARRAY(SELECT d.seq FROM leaseq_jobs d
                  WHERE d.queue = p_queue AND d.status = 'leased' AND (d.attempts >= d.max_attempts OR d.deadline IS NOT NULL)
                    AND (CASE WHEN d.attempts >= d.max_attempts THEN d.lease_until ELSE d.deadline END) <= t
                  FOR UPDATE SKIP LOCKED));

  UPDATE leaseq_jobs j
  SET status = 'quarantined', ready = 0, updated_at = t,
      reason = 'deadline passed at ' || j.deadline || ' (unix ms), ' || j.attempts || ' of ' || j.max_attempts || ' attempts used'
  WHERE j.seq = ANY (ARRAY(SELECT d.seq FROM leaseq_jobs d
                  WHERE d.queue = p_queue AND d.status = 'pending' AND d.deadline IS NOT NULL AND d.deadline <= t
                  FOR UPDATE SKIP LOCKED));

  UPDATE leaseq_jobs j SET ready = 1
  WHERE j.seq = ANY (ARRAY(SELECT w.seq FROM leaseq_jobs w
                  WHERE w.queue = p_queue AND w.ready = 0 AND w.status IN ('pending', 'leased') AND w.due_at <= t
                    AND w.attempts < w.max_attempts AND (w.deadline IS NULL OR w.deadline > t)
                  FOR UPDATE SKIP LOCKED));
END $$;

-- The number of done and quarantined jobs of each queue, as in schema.sql,
-- kept by a trigger. Each count is spread over rows by backend: a
-- transaction changes only the row of its own backend (shard is
-- pg_backend_pid()), and no two transactions that run at once share a
-- backend, so finishes, claims' quarantine sweeps and purges never wait
-- for one another's counter rows nor deadlock on them (rule 39); a shared
-- row would be a lock every one of them waits for until the one before it
-- commits, and rows shared by a hash of the job (version 3) deadlocked
-- claims whose sweeps moved several jobs. A row may go negative (a backend
-- purging jobs others finished); Stats adds the rows up. A backend's first
-- change to a count folds into its own new row the rows of backends that
-- have ended, so the rows stay about as many as there are backends. It
-- skips rows another transaction holds, so the fold waits for nothing; the
-- only wait left is a new backend's, for a fold of the row of an ended
-- backend whose pid the new one was given, while that fold commits. A fold
-- moves counts between rows in one transaction, so the sum is kept whatever
-- runs beside it. The rows of version 3 (shards 0 to 63) fold the same way.
CREATE TABLE IF NOT EXISTS leaseq_counts (
  queue  text    NOT NULL,
  status text    NOT NULL CHECK (status IN ('done', 'quarantined')),
  shard  integer NOT NULL,
  n      bigint  NOT NULL,
  PRIMARY KEY (queue, status, shard)
);

CREATE OR REPLACE FUNCTION leaseq_count_add(p_queue text, p_status text, p_n bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE leaseq_counts SET n = n + p_n WHERE queue = p_queue AND status = p_status AND shard = pg_backend_pid();
  IF FOUND THEN
    RETURN;
  END IF;
  WITH gone AS (
    DELETE FROM leaseq_counts c
    WHERE (c.queue, c.status, c.shard) IN (
      SELECT f.queue, f.status, f.shard FROM leaseq_counts f
      WHERE f.queue = p_queue AND f.status = p_status
        AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = f.shard)
      FOR UPDATE SKIP LOCKED)
    RETURNING c.n)
  INSERT INTO leaseq_counts AS c (queue, status, shard, n)
  SELECT p_queue, p_status, pg_backend_pid(), p_n + coalesce(sum(gone.n), 0) FROM gone
  ON CONFLICT (queue, status, shard) DO UPDATE SET n = c.n + excluded.n;
END $$;

CREATE OR REPLACE FUNCTION leaseq_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.status IN ('done', 'quarantined') THEN
    PERFORM leaseq_count_add(OLD.queue, OLD.status, -1);
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.status IN ('done', 'quarantined') THEN
    PERFORM leaseq_count_add(NEW.queue, NEW.status, 1);
  END IF;
  RETURN NULL;
END $$;

-- A statement that counts its rows itself (leaseq_pool_step's finishes)
-- says so in the transaction's setting leaseq.counted, and the trigger
-- leaves its rows alone: one count for the statement instead of one per row,
-- which cost about a fifteenth of the server's CPU per job of a pool (version 9).
CREATE OR REPLACE TRIGGER leaseq_counts_update AFTER UPDATE OF status ON leaseq_jobs FOR EACH ROW
  WHEN (OLD.status <> NEW.status
        AND (OLD.status IN ('done', 'quarantined') OR NEW.status IN ('done', 'quarantined'))
        AND current_setting('leaseq.counted', true) IS DISTINCT FROM 'yes')
  EXECUTE FUNCTION leaseq_count();

CREATE OR REPLACE TRIGGER leaseq_counts_delete AFTER DELETE ON leaseq_jobs FOR EACH ROW
  WHEN (OLD.status IN ('done', 'quarantined'))
  EXECUTE FUNCTION leaseq_count();

-- leaseq_pool_step is one cycle of a worker pool (cycle.go, rule 48): the
-- finishes of its handlers, then the claim that refills their slots, in one
-- statement at one instant on the server's clock, so that the results and
-- the next jobs share one commit. Finishes come first and each is fenced as finish.sql fences one,
-- on a row no other transaction holds; the claims sweep as leaseq_claim
-- does, holding leaseq_sweeper only while the server runs the statement,
-- which commits on its own. The rows of accepted finishes come back with req 0, the claims of the
-- i-th claim request with req i.
CREATE OR REPLACE FUNCTION leaseq_pool_step(p_queue text, f_ids text[], f_owners text[], f_tokens bigint[],
                                            c_owners text[], c_leases bigint[], c_maxes integer[])
RETURNS TABLE (req integer, seq bigint, id text, owner text, qty bigint, payload bytea, token bigint,
               attempts integer, lease_until bigint, deadline bigint, priority integer,
               kind text, created_at bigint, run_at bigint, max_attempts integer)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  t bigint := leaseq_now();
  finished bigint;
BEGIN
  -- A row another transaction holds is skipped, not waited for: the
  -- finish of a row an operator locked would hold up every finish and
  -- claim of the step. Its caller settles it alone (cycle.go).
  -- Every row it updates goes from leased to done: it counts them once,
  -- after, and leaseq_counts_update leaves them alone meanwhile (the
  -- setting ends with the transaction, and is cleared before the claim,
  -- whose sweep may quarantine jobs the trigger counts).
  IF array_length(f_ids, 1) > 0 THEN
    PERFORM set_config('leaseq.counted', 'yes', true);
    RETURN QUERY
    UPDATE leaseq_jobs j SET status = 'done', ready = 0, updated_at = t
    WHERE j.seq = ANY (ARRAY(SELECT d.seq FROM leaseq_jobs d
                    JOIN unnest(f_ids, f_owners, f_tokens) AS c(id, owner, token)
                      ON d.queue = p_queue AND d.id = c.id AND d.owner = c.owner AND d.token = c.token
                    WHERE d.status = 'leased' AND d.lease_until > t AND (d.deadline IS NULL OR d.deadline > t)
                    FOR UPDATE OF d SKIP LOCKED))
    RETURNING 0, j.seq, j.id, j.owner, j.qty, NULL::bytea, j.token, j.attempts, j.lease_until, j.deadline, j.priority,
              j.kind, j.created_at, j.run_at, j.max_attempts;
    GET DIAGNOSTICS finished = ROW_COUNT;
    PERFORM set_config('leaseq.counted', '', true);
    IF finished > 0 THEN
      PERFORM leaseq_count_add(p_queue, 'done', finished);
    END IF;
  END IF;
  FOR i IN 1 .. coalesce(array_length(c_owners, 1), 0) LOOP
    RETURN QUERY
    SELECT i, r.seq, r.id, c_owners[i], r.qty, r.payload, r.token, r.attempts, r.lease_until, r.deadline, r.priority,
           r.kind, r.created_at, r.run_at, r.max_attempts
    FROM leaseq_claim(p_queue, c_owners[i], t, c_leases[i], c_maxes[i]) r;
  END LOOP;
END $$;

-- Rule 54 (Pause): one row per paused queue, written by Pause and deleted
-- by Resume. leaseq_claim_jobs, which every claim and pool step runs, and
-- next_due.sql read it: while a queue has its row, no process claims from
-- it.
CREATE TABLE IF NOT EXISTS leaseq_paused (
  queue     text   NOT NULL PRIMARY KEY,
  paused_at bigint NOT NULL
);

-- Rule 50 (schema version 6): jobs have a kind, '' for none, and List by
-- kind reads leaseq_jobs_kind, as in the SQLite engine's schema_kind.sql.
-- A column with a constant default rewrites no row; the index is partial,
-- so jobs without a kind never touch it.
ALTER TABLE leaseq_jobs ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS leaseq_jobs_kind ON leaseq_jobs (queue, kind, status, seq) WHERE kind <> '';
