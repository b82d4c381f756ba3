package leaseq_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// chaosEngine is what the chaos test does differently on each engine
// (rule 42 in docs/rules.md): where the database is and how a
// process opens it, its placeholders, the audit's triggers, the integrity
// check, and the parent's chaos beyond kills and pauses — long reads that
// hold SQLite's file lock, or crash restarts of the PostgreSQL server.
// Everything else, the checker above all, is the same on both.
type chaosEngine struct {
	name string
	// fresh is where a new, empty database is: a file in dir, or a URL.
	// The chaos processes get it in LEASEQ_CHAOS_DB.
	fresh func(t *testing.T, dir string) string
	// open opens the database at where as a chaos process does.
	open func(where string) (*sql.DB, error)
	// rebind turns a query's ?1, ?2 … placeholders into the engine's.
	rebind func(query string) string
	// audit installs chaos_audit and its triggers (see chaosAuditSQL).
	audit []string
	// integrity is "" if the engine's own check finds the queue's tables
	// and indexes intact, else what it found.
	integrity func(db *sql.DB) string
	// holds says the parent holds long reads (see chaos.hold); restart,
	// if set, crash-restarts the server (see chaos.restart).
	holds   bool
	restart func(t testing.TB)
}

// chaosEngines are the engines TestChaos and TestChaosCheckerCatches run
// on, each as a subtest of its name.
var chaosEngines = []chaosEngine{
	{
		name:      "sqlite",
		fresh:     func(_ *testing.T, dir string) string { return filepath.Join(dir, "chaos.db") },
		open:      openBusy,
		rebind:    sqliteEngine.rebind,
		audit:     chaosAuditSQL,
		integrity: sqliteIntegrity,
		holds:     true,
	},
	{
		name:      "postgres",
		fresh:     func(t *testing.T, _ string) string { return pgtest.URL(t) },
		open:      func(url string) (*sql.DB, error) { return sql.Open("pgx", url) },
		rebind:    postgresEngine.rebind,
		audit:     chaosAuditPostgresSQL,
		integrity: postgresIntegrity,
		restart:   pgtest.Restart,
	},
}

// chaosServerClockPool is the pool of TestChaos that runs on the database
// server's clock where there is one (PostgreSQL); the other runs on its
// recording clock, as every process on SQLite does (chaosProc.queueClock).
const chaosServerClockPool = "pool2"

// onServerClock reports whether the process named owner runs on the
// server's clock.
func (e chaosEngine) onServerClock(owner string) bool {
	return e.name == "postgres" && owner == chaosServerClockPool
}

// chaosEngineNamed is the chaos engine called name.
func chaosEngineNamed(name string) (chaosEngine, error) {
	for _, e := range chaosEngines {
		if e.name == name {
			return e, nil
		}
	}
	return chaosEngine{}, fmt.Errorf("no chaos engine %q", name)
}

// chaosAuditPostgresSQL is chaosAuditSQL on PostgreSQL: the same table and
// columns, filled by row triggers on inserts and on updates of the same
// columns, so that the checker reads the same rows. UPDATE OF fires, as
// SQLite's does, when a column is in the statement's SET list, whether or
// not its value changes. The triggers run inside the transaction that makes
// the change, so a change is in the audit exactly when it committed. seq is
// in commit order for each job, which is all the checker asks of it: a
// trigger takes its seq while the change holds the row's lock (or before
// the new row is visible to anyone), and the next change of the row waits
// for that lock until the commit. Across jobs, concurrent transactions may
// commit in another order than their seqs. committed is the server's clock
// as the transaction commits (a deferred trigger, run by COMMIT just
// before the commit record), for the pool on the server's clock, whose
// calls judge at an instant read before that (see readChaosAudit).
var chaosAuditPostgresSQL = []string{`
CREATE TABLE IF NOT EXISTS chaos_audit (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, queue text NOT NULL, id text NOT NULL, old_status text NOT NULL,
  status text NOT NULL, owner text NOT NULL, old_token bigint NOT NULL, token bigint NOT NULL,
  attempts integer NOT NULL, lease_until bigint, deadline bigint, run_at bigint, reason text NOT NULL,
  at bigint NOT NULL, step integer NOT NULL DEFAULT 0, committed bigint)`, `
CREATE OR REPLACE FUNCTION chaos_audit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  stack text;
BEGIN
  -- step: the change was made by a pool's step (leaseq_pool_step is on
  -- the call stack), for checkChaosSteps.
  GET DIAGNOSTICS stack = PG_CONTEXT;
  INSERT INTO chaos_audit (queue, id, old_status, status, owner, old_token, token, attempts, lease_until, deadline,
    run_at, reason, at, step)
  VALUES (NEW.queue, NEW.id, CASE WHEN TG_OP = 'INSERT' THEN '' ELSE OLD.status END, NEW.status, NEW.owner,
    CASE WHEN TG_OP = 'INSERT' THEN NEW.token ELSE OLD.token END, NEW.token, NEW.attempts, NEW.lease_until,
    NEW.deadline, NEW.run_at, NEW.reason, NEW.updated_at, (position('leaseq_pool_step(' IN stack) > 0)::integer);
  RETURN NULL;
END $$`, `
CREATE OR REPLACE TRIGGER chaos_audit_update
AFTER UPDATE OF status, owner, token, attempts, lease_until, run_at, reason, updated_at ON leaseq_jobs
FOR EACH ROW EXECUTE FUNCTION chaos_audit()`, `
CREATE OR REPLACE TRIGGER chaos_audit_insert AFTER INSERT ON leaseq_jobs
FOR EACH ROW EXECUTE FUNCTION chaos_audit()`, `
CREATE OR REPLACE FUNCTION chaos_audit_committed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE chaos_audit SET committed = floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint WHERE seq = NEW.seq;
  RETURN NULL;
END $$`, `
DROP TRIGGER IF EXISTS chaos_audit_committed ON chaos_audit`, `
CREATE CONSTRAINT TRIGGER chaos_audit_committed AFTER INSERT ON chaos_audit
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION chaos_audit_committed()`}

func installChaosAudit(t *testing.T, db *sql.DB, e chaosEngine) {
	t.Helper()
	for _, stmt := range e.audit {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("installing the audit: %v", err)
		}
	}
}

func sqliteIntegrity(db *sql.DB) string {
	var ic string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ic); err != nil || ic != "ok" {
		return fmt.Sprintf("PRAGMA integrity_check: %q, %v", ic, err)
	}
	return ""
}

// postgresIntegrity is PRAGMA integrity_check's counterpart after crash
// recoveries: amcheck verifies the queue's tables, and that each B-tree
// index holds exactly its table's rows (bt_index_check with heapallindexed).
// Installing amcheck needs a superuser, as on the server pgtest starts; on a
// server where the test's user is not one, nothing is checked.
func postgresIntegrity(db *sql.DB) string {
	var installed bool
	if err := db.QueryRow("SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'amcheck')").Scan(&installed); err != nil {
		return fmt.Sprintf("amcheck: %v", err)
	}
	if !installed {
		if _, err := db.Exec("CREATE EXTENSION IF NOT EXISTS amcheck"); err != nil {
			return ""
		}
	}
	var problems []string
	rows, err := db.Query(`SELECT t || ': ' || msg FROM unnest(ARRAY['leaseq_jobs', 'leaseq_purged']) AS t,
		LATERAL verify_heapam(t::regclass) AS v(blkno, offnum, attnum, msg)`)
	if err != nil {
		return fmt.Sprintf("verify_heapam: %v", err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return fmt.Sprintf("verify_heapam: %v", err)
		}
		problems = append(problems, p)
	}
	if err := rows.Err(); err != nil {
		return fmt.Sprintf("verify_heapam: %v", err)
	}
	var checked int
	err = db.QueryRow(`SELECT count(bt_index_check(c.oid, true))
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
		WHERE i.indrelid IN ('leaseq_jobs'::regclass, 'leaseq_purged'::regclass) AND a.amname = 'btree'`).Scan(&checked)
	switch {
	case err != nil:
		problems = append(problems, fmt.Sprintf("bt_index_check: %v", err))
	case checked == 0:
		problems = append(problems, "bt_index_check: no index checked")
	}
	if len(problems) == 0 {
		return ""
	}
	return "amcheck: " + strings.Join(problems, "; ")
}

// newChaosQueue is leaseq.New, tried again while it fails: a process may
// start while the server is restarting, and then waits for it, as a
// service would.
func newChaosQueue(p *chaosProc, db *sql.DB, clock leaseq.Clock) (*leaseq.Queue, error) {
	for give := time.Now().Add(chaosDrain); ; {
		q, err := leaseq.New(p.ctx, db, leaseq.Options{Clock: clock, MaxAttempts: chaosMaxAttempts})
		if err == nil || time.Now().After(give) {
			return q, err
		}
		time.Sleep(chaosRetryAfter)
	}
}
