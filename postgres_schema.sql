-- leaseq schema on PostgreSQL, version 3 (the version is the row of
-- leaseq_schema). The same tables, columns and meanings as schema.sql, so
-- that one row means the same on both engines; times are bigint Unix
-- milliseconds from the queue's clock (the server's clock when the Queue has
-- no Clock of its own: leaseq_now). Every statement of the queue is a range
-- scan of one of these indexes; postgres_plan_test.go checks it with EXPLAIN.

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

-- The indexes of schema.sql, for the same statements; see there for why
-- each is partial.
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

-- "Now" on the server's clock, in Unix milliseconds, truncated like every
-- instant the queue stores (rule 8 in README's "The rules"). It reads
-- statement_timestamp(), which is fixed for the whole statement, so every
-- comparison of one statement — and of the claim function, which runs as one
-- statement — sees the same instant, and hosts whose clocks disagree still
-- agree on when a lease ends (rule 40).
CREATE OR REPLACE FUNCTION leaseq_now() RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint $$;

-- leaseq_claim is Claim on PostgreSQL: the quarantine sweeps, the promotion
-- of due rows into leaseq_jobs_ready, and the claim of up to p_max jobs, as
-- one statement at one instant (p_now, or the server's clock when NULL).
-- Every step locks rows with FOR UPDATE SKIP LOCKED (rule 39): a claimer
-- never waits for rows another transaction holds, whether another claimer
-- is taking them or a worker is finishing one, and two claimers never get
-- one job, because a row is updated only by the transaction that locked it.
-- A row a sweep skipped may be claimable once its holder lets go, so the
-- claim itself also refuses what the sweep would have quarantined: used-up
-- attempts and a passed deadline. Each step picks its rows in a subquery
-- that ARRAY() runs first, so the update finds them by primary key whatever
-- the planner guesses of how many there are.
CREATE OR REPLACE FUNCTION leaseq_claim(p_queue text, p_owner text, p_now bigint, p_lease bigint, p_max integer)
RETURNS TABLE (seq bigint, id text, qty bigint, payload bytea, token bigint, attempts integer,
               lease_until bigint, deadline bigint, priority integer)
LANGUAGE plpgsql
-- Planned once per session, not on every call: planning its four
-- statements cost more server time than running them. The ARRAY() forms
-- keep the generic plans to index ranges whatever the queue's shape.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  t bigint := coalesce(p_now, leaseq_now());
BEGIN
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
                  FOR UPDATE SKIP LOCKED));

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
                  ORDER BY r.priority DESC, r.due_at, r.seq
                  LIMIT p_max
                  FOR UPDATE SKIP LOCKED))
  RETURNING j.seq, j.id, j.qty, j.payload, j.token, j.attempts, j.lease_until, j.deadline, j.priority;
END $$;

-- The number of done and quarantined jobs of each queue, as in schema.sql,
-- kept by a trigger. Each count is spread over 64 rows by the
-- job's seq: a counter on one row would be a lock every finishing
-- transaction waits for until the one before it commits, which would make
-- the workers of every host finish one at a time. Stats adds the shards up.
CREATE TABLE IF NOT EXISTS leaseq_counts (
  queue  text    NOT NULL,
  status text    NOT NULL CHECK (status IN ('done', 'quarantined')),
  shard  integer NOT NULL,
  n      bigint  NOT NULL,
  PRIMARY KEY (queue, status, shard)
);

CREATE OR REPLACE FUNCTION leaseq_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.status IN ('done', 'quarantined') THEN
    UPDATE leaseq_counts SET n = n - 1
    WHERE queue = OLD.queue AND status = OLD.status AND shard = OLD.seq % 64;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.status IN ('done', 'quarantined') THEN
    INSERT INTO leaseq_counts AS c (queue, status, shard, n) VALUES (NEW.queue, NEW.status, NEW.seq % 64, 1)
    ON CONFLICT (queue, status, shard) DO UPDATE SET n = c.n + 1;
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER leaseq_counts_update AFTER UPDATE OF status ON leaseq_jobs FOR EACH ROW
  WHEN (OLD.status <> NEW.status
        AND (OLD.status IN ('done', 'quarantined') OR NEW.status IN ('done', 'quarantined')))
  EXECUTE FUNCTION leaseq_count();

CREATE OR REPLACE TRIGGER leaseq_counts_delete AFTER DELETE ON leaseq_jobs FOR EACH ROW
  WHEN (OLD.status IN ('done', 'quarantined'))
  EXECUTE FUNCTION leaseq_count();

-- leaseq_pool_step is what the worker pools of one process on one queue
-- have gathered while the last step ran (postgres_pool.go): the finishes of
-- their handlers, then their claims, in one statement at one instant on the
-- server's clock, so that many pools' results and next jobs share one
-- commit. Finishes come first and each is fenced as pgFenceSQL fences one,
-- on a row no other transaction holds;
-- the rows of accepted finishes come back with req 0, the claims of the
-- i-th claim request with req i.
CREATE OR REPLACE FUNCTION leaseq_pool_step(p_queue text, f_ids text[], f_owners text[], f_tokens bigint[],
                                            c_owners text[], c_leases bigint[], c_maxes integer[])
RETURNS TABLE (req integer, seq bigint, id text, owner text, qty bigint, payload bytea, token bigint,
               attempts integer, lease_until bigint, deadline bigint, priority integer)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
  t bigint := leaseq_now();
BEGIN
  -- A row another transaction holds is skipped, not waited for: the
  -- finish of a row an operator locked would hold up every finish and
  -- claim of the step. Its caller settles it alone (postgres_pool.go).
  RETURN QUERY
  UPDATE leaseq_jobs j SET status = 'done', ready = 0, updated_at = t
  WHERE j.seq = ANY (ARRAY(SELECT d.seq FROM leaseq_jobs d
                  JOIN unnest(f_ids, f_owners, f_tokens) AS c(id, owner, token)
                    ON d.queue = p_queue AND d.id = c.id AND d.owner = c.owner AND d.token = c.token
                  WHERE d.status = 'leased' AND d.lease_until > t AND (d.deadline IS NULL OR d.deadline > t)
                  FOR UPDATE OF d SKIP LOCKED))
  RETURNING 0, j.seq, j.id, j.owner, j.qty, NULL::bytea, j.token, j.attempts, j.lease_until, j.deadline, j.priority;
  FOR i IN 1 .. coalesce(array_length(c_owners, 1), 0) LOOP
    RETURN QUERY
    SELECT i, r.seq, r.id, c_owners[i], r.qty, r.payload, r.token, r.attempts, r.lease_until, r.deadline, r.priority
    FROM leaseq_claim(p_queue, c_owners[i], t, c_leases[i], c_maxes[i]) r;
  END LOOP;
END $$;
