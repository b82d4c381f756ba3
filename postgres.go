package leaseq

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The PostgreSQL engine. Where SQLite has one writer per file, PostgreSQL
// has many writers and row locks, so this engine keeps none of SQLite's
// transaction strategy (tx.go, group.go): no writer's turn, no pinned
// connection, no group commit. Each single call is one statement on the
// pool, committed on its own; a claim, a batch, an operator's call and a
// purge chunk are one short READ COMMITTED transaction. Concurrent calls run on as many
// connections as the pool allows, and the server batches their commits
// itself: a backend that flushes the write-ahead log flushes every commit
// record written so far, so sixteen workers finishing at once share
// flushes without any gathering here.
//
// Why READ COMMITTED is enough for the fence. A fenced call is one UPDATE
// whose WHERE is the whole fence. If another transaction holds the row (a
// claim taking it, a worker finishing it), the UPDATE waits for it, and once
// it commits PostgreSQL evaluates the WHERE again on the newest version of
// the row before changing anything: a token the new claim moved, or a
// status the finish changed, fails the fence then. So a fenced call acts
// only on the row as it is when it acts, exactly as under SQLite's lock,
// and never on a version another transaction has replaced. Claims lock
// what they take with FOR UPDATE SKIP LOCKED, under advisory try-locks
// that keep two claims off one row at once (leaseq_claim in
// postgres_schema.sql), so they never wait for each other or for a finish.
//
// Statements read "now" themselves when the Queue has no Clock (rule 40):
// their now argument is NULL and leaseq_now() stands in for it.

//go:embed postgres_schema.sql
var postgresSchemaSQL string

// pgEngine is what every Queue on one PostgreSQL *sql.DB shares.
type pgEngine struct {
	dbh  *sql.DB
	wake wakers
	// queues counts the open Queues on the engine, guarded by enginesMu.
	queues int
	// serverNow is the clock of the engine's Queues that have none of
	// their own.
	serverNow *serverClock
	// pools gather the worker pools' calls of each queue
	// (postgres_pool.go).
	poolsMu sync.Mutex
	pools   map[string]*pgPool
	// migrated is set once the schema is known to be current.
	migratedMu sync.Mutex
	migrated   bool
	// ident tells the database apart from others (EnqueueTx; see
	// foreign).
	ident identity
}

var pgEngines = map[*sql.DB]*pgEngine{} // guarded by storesMu

// openPostgres returns db's engine, making it for the first open Queue.
func openPostgres(db *sql.DB) *pgEngine {
	storesMu.Lock()
	defer storesMu.Unlock()
	e := pgEngines[db]
	if e == nil {
		e = &pgEngine{dbh: db}
		e.serverNow = &serverClock{e: e}
		pgEngines[db] = e
	}
	e.queues++
	return e
}

func (e *pgEngine) release() {
	storesMu.Lock()
	defer storesMu.Unlock()
	if e.queues--; e.queues == 0 {
		delete(pgEngines, e.dbh)
	}
}

func (e *pgEngine) db() *sql.DB        { return e.dbh }
func (e *pgEngine) wakers() *wakers    { return &e.wake }
func (e *pgEngine) usable() error      { return dbClosed(e.dbh) }
func (e *pgEngine) serverClock() Clock { return e.serverNow }

// now reads the server's clock (serverClock).
func (e *pgEngine) now(ctx context.Context) (int64, error) {
	var ms int64
	err := e.dbh.QueryRowContext(ctx, "SELECT leaseq_now()").Scan(&ms)
	return ms, err
}

// schemaLock is the advisory lock key that makes migrations from several
// hosts at once take turns: the first creates or upgrades the schema, the
// others find it done.
const schemaLock = 0x6c65617365710a // "leaseq\n"

// pgSchemaCurrent is the version of postgres_schema.sql, kept in
// leaseq_schema: 4 added leaseq_purged_token and keeps leaseq_counts by
// backend; 5 lets one claim at a time sweep and has the claim take a row
// only under an advisory lock of its seq (leaseq_claim says why). Every
// version's script runs on any older schema, as it creates what is missing
// and replaces every function and trigger. It is
// PostgreSQL's own number: SQLite's schema is SchemaVersion.
const pgSchemaCurrent = 5

// migrate checks that the schema is current with one read, which DML
// rights (or read-only ones) suffice for, and only when it is not creates
// or upgrades it: in one transaction under schemaLock, which reads the
// version again, since another host may have migrated meanwhile. The
// version lives in leaseq_schema.
func (e *pgEngine) migrate(ctx context.Context) error {
	e.migratedMu.Lock()
	defer e.migratedMu.Unlock()
	if e.migrated {
		return nil
	}
	v, err := pgSchemaVersion(ctx, pgDB{e.dbh})
	switch {
	case err != nil:
		return fmt.Errorf("reading the schema version: %w", err)
	case v == pgSchemaCurrent:
		e.migrated = true
		return nil
	case v > pgSchemaCurrent:
		return newerSchema(v)
	}
	err = e.write(ctx, func(ctx context.Context, tx execer) error {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", schemaLock)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS leaseq_schema (version integer NOT NULL)"); err != nil {
			return err
		}
		v, err := pgSchemaVersion(ctx, tx)
		switch {
		case err != nil:
			return err
		case v == pgSchemaCurrent:
			return nil
		case v > pgSchemaCurrent:
			return newerSchema(v)
		}
		for _, stmt := range splitSQL(postgresSchemaSQL) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("creating the schema: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM leaseq_schema"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO leaseq_schema (version) VALUES ($1)", pgSchemaCurrent)
		return err
	})
	e.migrated = err == nil
	return err
}

// pgSchemaVersion reads the schema version: 0 when there is none yet (no
// leaseq_schema table, or no row in it).
func pgSchemaVersion(ctx context.Context, ex execer) (int, error) {
	var v int
	err := ex.QueryRowContext(ctx, "SELECT version FROM leaseq_schema").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || sqlState(err) == sqlStateUndefinedTable {
		return 0, nil
	}
	return v, err
}

// newerSchema is the error for a database of a later version of leaseq.
func newerSchema(v int) error {
	return fmt.Errorf("database schema version is %d, this leaseq knows version %d and older: %w", v, pgSchemaCurrent, ErrInvalid)
}

// splitSQL splits a script into statements at semicolons outside comments
// and $$-quoted function bodies.
func splitSQL(script string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for _, line := range strings.SplitAfter(script, "\n") {
		if !quoted && strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		for i := 0; i < len(line); i++ {
			if strings.HasPrefix(line[i:], "$$") {
				quoted = !quoted
				b.WriteString("$$")
				i++
				continue
			}
			if line[i] == ';' && !quoted {
				if s := strings.TrimSpace(b.String()); s != "" {
					out = append(out, s)
				}
				b.Reset()
				continue
			}
			b.WriteByte(line[i])
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// pgInsertSQL writes one job, as insertSQL does on SQLite, at the instant
// $9, or the server's clock when that is NULL: the enqueue time, and when
// the job is due. ON CONFLICT DO NOTHING makes a taken ID return no row
// instead of an error that would abort the caller's transaction
// (EnqueueTx). The remembered token it reads is that of the statement's
// snapshot, which a purge of the ID committing while the insert runs is
// not in: the trigger leaseq_purged_token (postgres_schema.sql) corrects
// it, here and in pgInsertManySQL (rule 21).
const pgInsertSQL = `
INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
    due_at, ready, token, created_at, updated_at)
SELECT $1, $2, $3, $4, 'pending', $5, $6, $7, $8,
    greatest(coalesce($7, t.now), t.now), CASE WHEN coalesce($7, t.now) <= t.now THEN 1 ELSE 0 END,
    coalesce((SELECT token FROM leaseq_purged WHERE queue = $1 AND id = $2), 0), t.now, t.now
FROM (SELECT ` + pgMarkedNow + ` AS now) t
ON CONFLICT (queue, id) DO NOTHING
RETURNING seq`

// pgMarkedNow is an insert's instant ($9, or the server's clock when that
// is NULL) that also takes the advisory lock $10 for the insert's
// transaction, when $10 is not NULL: the mark by which a call whose answer
// was cut short waits for its statement to end (answered). The subquery
// that reads it is run once, not folded into the insert, as it is
// volatile. No other transaction holds the random key, so the lock is
// always taken; were it not, the instant would be NULL and the insert
// would fail rather than write unmarked.
const pgMarkedNow = `CASE WHEN pg_try_advisory_xact_lock($10::bigint) IS NOT FALSE THEN coalesce($9::bigint, leaseq_now()) END`

// pgInsertManySQL writes a batch in one statement from arrays, in the
// batch's order, at one instant and with the mark $10 as pgInsertSQL does.
// A taken ID fails the whole statement with a unique violation, so nothing
// of the batch is written, and the batch needs no transaction of its own.
const pgInsertManySQL = `
INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
    due_at, ready, token, created_at, updated_at)
SELECT $1, u.id, u.qty, u.payload, 'pending', u.max_attempts, u.deadline, u.run_at, u.priority,
    greatest(coalesce(u.run_at, t.now), t.now), CASE WHEN coalesce(u.run_at, t.now) <= t.now THEN 1 ELSE 0 END,
    coalesce((SELECT p.token FROM leaseq_purged p WHERE p.queue = $1 AND p.id = u.id), 0), t.now, t.now
FROM (SELECT CASE WHEN pg_try_advisory_xact_lock($10::bigint) IS NOT FALSE
        THEN coalesce($2::bigint, leaseq_now()) END AS now) t,
    unnest($3::text[], $4::bigint[], $5::bytea[], $6::integer[], $7::bigint[], $8::bigint[], $9::integer[])
    WITH ORDINALITY AS u(id, qty, payload, max_attempts, deadline, run_at, priority, ord)
ORDER BY u.ord`

func (e *pgEngine) insert(ctx context.Context, tx execer, q *Queue, j Job, now int64) error {
	return e.insertMarked(ctx, tx, q, j, now, nil)
}

// insertMarked is insert with the mark of pgMarkedNow (nil: none).
func (e *pgEngine) insertMarked(ctx context.Context, tx execer, q *Queue, j Job, now int64, mark any) error {
	r := q.newRow(j, now)
	var seq int64
	err := tx.QueryRowContext(ctx, pgInsertSQL, q.name, j.ID, j.Qty, r.payload, r.maxAttempts,
		nullMillis(j.Deadline), r.runAt, j.Priority, nowOr(q, now), mark).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrDuplicate
	}
	return pgError(err)
}

// enqueue writes one job in a statement of its own, or a batch in one
// statement, and answers with what the statement did (answered): nil only
// when its jobs are written, ctx's error only when none is.
func (e *pgEngine) enqueue(ctx context.Context, q *Queue, jobs []Job, now int64, _ bool) (int, error) {
	args := pgJobArrays(q, jobs, now)
	mark := rand.Int64()
	write := func(ctx context.Context, db execer) error {
		if len(jobs) == 1 {
			return e.insertMarked(ctx, db, q, jobs[0], now, mark)
		}
		_, err := db.ExecContext(ctx, pgInsertManySQL, append(args, mark)...)
		return err
	}
	err := e.answered(ctx, write, func(ctx context.Context) (bool, error) { return e.written(ctx, args, mark) })
	if len(jobs) == 1 || !errors.Is(err, ErrDuplicate) {
		return -1, err
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pgAnswerWait)
	defer cancel()
	return e.firstTaken(fctx, q, args[2].([]string)), ErrDuplicate
}

// pgJobArrays are the arguments of pgInsertManySQL for jobs enqueued at
// now: the queue, the instant, and one array per column.
func pgJobArrays(q *Queue, jobs []Job, now int64) []any {
	n := len(jobs)
	ids, qtys, payloads := make([]string, n), make([]int64, n), make([][]byte, n)
	maxAttempts, priorities := make([]int32, n), make([]int32, n)
	deadlines, runAts := make([]*int64, n), make([]*int64, n)
	for i, j := range jobs {
		r := q.newRow(j, now)
		ids[i], qtys[i], payloads[i] = j.ID, int64(j.Qty), r.payload
		maxAttempts[i], priorities[i] = int32(r.maxAttempts), int32(j.Priority)
		if d := nullMillis(j.Deadline); d.Valid {
			deadlines[i] = &d.Int64
		}
		if r.runAt.Valid {
			runAts[i] = &r.runAt.Int64
		}
	}
	return []any{q.name, nowOr(q, now), ids, qtys, payloads, maxAttempts, deadlines, runAts, priorities}
}

// pgAnswerWait is how long a write whose context has ended still waits for
// the server's answer to the statement it sent, and then for the read that
// finds out what the statement did.
const pgAnswerWait = time.Second

// answered runs write, statements that commit on their own, and answers
// with what they did. A context that ends while they run does not cut them
// short at once: the server commits an autocommitted statement whatever
// the client does once it has the statement, so an answer of ctx's error
// then could be a lie, the jobs in the table, and a caller that tries again
// under new IDs would do the work twice. Instead the statement has
// pgAnswerWait after ctx ends to answer: its answer is what happened
// (errors table: ctx's error only when nothing of the call was written).
// Cut short after that (a server that does not answer), the call reads
// whether the statement's rows are there (found, within pgAnswerWait
// again) and answers nil if they are, ctx's error if not; when even that
// read gets no answer, it says that whether anything was written is not
// known, without ctx's error. A wait for a connection heeds ctx: nothing
// was sent then.
func (e *pgEngine) answered(ctx context.Context, write txFunc, found func(ctx context.Context) (bool, error)) error {
	cut := false
	err := retrySerialization(ctx, func() error {
		conn, err := e.dbh.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		cut, err = graced(ctx, func(sctx context.Context) error { return write(sctx, pgDB{conn}) })
		return err
	})
	err = pgError(err)
	if !cut || ctx.Err() == nil {
		return err
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pgAnswerWait)
	defer cancel()
	there, ferr := found(fctx)
	switch {
	case ferr != nil:
		return outcomeUnknown(ctx, ferr)
	case there:
		return nil
	}
	return ctx.Err()
}

// graced runs op on a context that ends pgAnswerWait after ctx does, and
// reports whether op failed as that context ended: cut short, with what it
// sent to the server perhaps carried out all the same.
func graced(ctx context.Context, op func(ctx context.Context) error) (cut bool, err error) {
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	late := context.AfterFunc(ctx, func() { time.AfterFunc(pgAnswerWait, stop) })
	defer late()
	err = op(sctx)
	return err != nil && sctx.Err() != nil, err
}

// outcomeUnknown is the answer of a call cut short by ctx whose read of
// what happened failed with err. Neither error is wrapped: the call may
// have been written, and a caller that took ctx's error for "nothing
// happened" would be misled.
func outcomeUnknown(ctx context.Context, err error) error {
	return fmt.Errorf("%v, and the server did not answer within %v; whether the call was written is not known (%v)", ctx.Err(), pgAnswerWait, err)
}

// pgWrittenSQL counts the jobs of pgJobArrays's arrays (same arguments)
// that are in the table as enqueued: same ID and fields, and enqueued at
// the instant given, unless that was the server's clock.
const pgWrittenSQL = `
SELECT count(*) FROM leaseq_jobs j,
    unnest($3::text[], $4::bigint[], $5::bytea[], $6::integer[], $7::bigint[], $8::bigint[], $9::integer[])
    AS u(id, qty, payload, max_attempts, deadline, run_at, priority)
WHERE j.queue = $1 AND j.id = u.id AND j.qty = u.qty AND j.payload = u.payload AND j.max_attempts = u.max_attempts
  AND j.deadline IS NOT DISTINCT FROM u.deadline AND j.run_at IS NOT DISTINCT FROM u.run_at
  AND j.priority = u.priority AND ($2::bigint IS NULL OR j.created_at = $2)`

// written reports whether every job of args (pgJobArrays) is in the table
// as a call with them would have written it: the read that tells an
// enqueue cut short whether it was written. It first waits for the lock
// the statement marked itself with (pgMarkedNow), so that it reads once
// the statement has ended, committed or not: a statement still running,
// waiting for a lock say, could otherwise commit after the read found
// nothing. It reads in a statement of its own, whose snapshot is taken
// after that wait (READ COMMITTED). A batch is one statement, so all or
// none of its jobs are its own. On the server's clock the instant is not
// known here, so a job with the same ID and fields enqueued by another
// call counts as this one's.
func (e *pgEngine) written(ctx context.Context, args []any, mark int64) (bool, error) {
	tx, err := e.dbh.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted, ReadOnly: true})
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock_shared($1)", mark); err != nil {
		return false, err
	}
	var n int
	err = tx.QueryRowContext(ctx, pgWrittenSQL, args...).Scan(&n)
	return n == len(args[2].([]string)), err
}

// firstTaken is the index of the first of ids that a job of q has, or -1:
// which ID a failed batch insert ran into.
func (e *pgEngine) firstTaken(ctx context.Context, q *Queue, ids []string) int {
	rows, err := e.dbh.QueryContext(ctx, "SELECT id FROM leaseq_jobs WHERE queue = $1 AND id = ANY($2)", q.name, ids)
	if err != nil {
		return -1
	}
	defer rows.Close()
	taken := map[string]bool{}
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			taken[id] = true
		}
	}
	for i, id := range ids {
		if taken[id] {
			return i
		}
	}
	return -1
}

// nowOr is the instant argument of a statement judged at now: now, or NULL
// when the statement reads the server's clock itself.
func nowOr(q *Queue, now int64) any {
	if q.serverClock {
		return nil
	}
	return now
}

// pgSweepSQL runs a claim's sweeps (leaseq_sweep in postgres_schema.sql).
const pgSweepSQL = `SELECT leaseq_sweep($1, $2)`

// pgClaimSQL claims through leaseq_claim_jobs (postgres_schema.sql).
const pgClaimSQL = `SELECT seq, id, qty, payload, token, attempts, lease_until, deadline, priority
FROM leaseq_claim_jobs($1, $2, $3, $4, $5)`

// claim runs leaseq_claim's two parts: the sweeps as a statement of their
// own, committed as the server ends it, so that the lock that lets one
// claim of the queue at a time sweep is never held while the server waits
// for this process (a process that stalls before its COMMIT would stop the
// sweeps of every other claim); then the claim in a transaction of its
// own. A sweep cut short by ctx may have committed: it moved only jobs no
// claim may take and promoted due ones, as any claim's sweep would, so the
// claim still answers with ctx's error. An idle claim changes no row and
// so takes no row lock (rule 23 in docs/rules.md). The claim's injected
// clock is read once the claim holds its connection, so that a
// wait for one (a new connection takes a while, more so while the server
// recovers) does not leave the claim judging at a stale instant (rule 8);
// the rows it takes it locks itself, so it cannot read a clock of this
// process after that. A worker pool's claim on the server's clock joins its
// queue's pool step instead (postgres_pool.go).
//
// Every statement runs on ctx, so that a claim returns when ctx ends, also
// while the server does not answer (rule 24): the driver then closes the
// connection, and a transaction the server had not been asked to commit
// is rolled back once the server notices. The claims are read before the
// COMMIT, so that a COMMIT cut short by ctx — which the server may carry
// out after its caller left — leaves claims this process knows: they are
// released at once (abandon), not left leased to nobody until their leases
// end.
func (e *pgEngine) claim(ctx context.Context, q *Queue, owner string, lease time.Duration, max int, share sharing) ([]Claim, error) {
	if share == sharePool && q.serverClock {
		return e.pool(q).claim(ctx, owner, lease, max)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conn, err := e.dbh.Conn(ctx)
	if err != nil {
		return nil, pgError(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, pgSweepSQL, q.name, q.nowArg()); err != nil {
		return nil, pgError(err)
	}
	var cs []Claim
	err = retrySerialization(ctx, func() error {
		cs = nil
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, pgClaimSQL, q.name, owner, q.nowArg(), lease.Milliseconds(), max)
		if err == nil {
			cs, err = scanClaims(rows, owner)
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			tx.Rollback()
			cs = nil
			return err
		}
		if err := tx.Commit(); err != nil {
			if ctx.Err() != nil {
				// The caller left: the COMMIT was cut short, and the server
				// may still carry it out. A COMMIT that failed otherwise (the
				// connection lost) is rule 41's unknown outcome, as for every
				// call: its leases run out as a crashed worker's do.
				e.abandon(q, cs)
			}
			cs = nil
			return err
		}
		return nil
	})
	if len(cs) == 0 {
		cs = nil
	}
	return cs, pgError(err)
}

// undoneReason is the reason a claim undone by abandon leaves.
const undoneReason = "claim undone: its caller left before the claim's answer came"

// abandonWait bounds the undoing of claims whose caller left.
const abandonWait = 30 * time.Second

// abandon undoes, in the background, claims of q that may have committed
// after their caller left with an error: each is released with no delay,
// fenced, as Work's shutdown releases a job (its attempt stays counted, as
// every claim's does; a job whose attempts are used up is quarantined). It
// first locks the jobs' rows, so that it waits for the claim's transaction
// while the server has not settled it: the release alone would see the
// rows as they were before the claim and pass them by. If the claims did
// not commit, nothing matches. A failed try is made again until
// abandonWait has passed or the database is closed; a server that does not
// answer for longer leaves the claims leased until their leases end, as a
// crashed worker's are.
func (e *pgEngine) abandon(q *Queue, cs []Claim) {
	if len(cs) == 0 {
		return
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), abandonWait)
		defer cancel()
		for n := 1; ; n++ {
			undone := false
			err := e.write(ctx, func(ctx context.Context, tx execer) error {
				if err := lockJobs(ctx, tx, q, ids...); err != nil {
					return err
				}
				now := q.nowArg()
				for _, c := range cs {
					r, err := fencedTx(ctx, tx, q, postgresFenced[fenceRelease], releaseFenced(c, 0, undoneReason), now)
					if err != nil {
						return err
					}
					undone = undone || r.ok
				}
				return nil
			})
			if err == nil {
				if undone {
					e.wake.signal(q.name)
				}
				return
			}
			if ctx.Err() != nil || e.usable() != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(faultDelay(n, 0)):
			}
		}
	}()
}

// pgNow is the instant of a statement: the queue's clock ($5), or the
// server's when that is NULL.
const pgNow = `coalesce($5::bigint, leaseq_now())`

// pgFenceSQL is fenceSQL on PostgreSQL, with the same arguments.
const pgFenceSQL = `
WHERE queue = $1 AND id = $2 AND owner = $3 AND token = $4 AND status = 'leased'
  AND lease_until > ` + pgNow + ` AND (deadline IS NULL OR deadline > ` + pgNow + `)
RETURNING lease_until`

// postgresFenced is each fenced call's statement on PostgreSQL: the SQLite
// statement of the same name, written in PostgreSQL's SQL.
var postgresFenced = [...]string{
	fenceFinish: `UPDATE leaseq_jobs SET status = 'done', ready = 0, updated_at = ` + pgNow + pgFenceSQL,
	fenceExtend: `UPDATE leaseq_jobs
SET lease_until = least(` + pgNow + ` + $6, coalesce(deadline, ` + pgNow + ` + $6)),
    due_at = least(` + pgNow + ` + $6, coalesce(deadline, ` + pgNow + ` + $6)),
    ready = 0, updated_at = ` + pgNow + pgFenceSQL,
	fenceRelease: `UPDATE leaseq_jobs
SET status = CASE WHEN attempts >= max_attempts OR ` + pgNow + ` + $6 >= coalesce(deadline, ` + pgNow + ` + $6 + 1)
        THEN 'quarantined' ELSE 'pending' END,
    reason = CASE WHEN attempts >= max_attempts THEN $8::text
        WHEN ` + pgNow + ` + $6 >= coalesce(deadline, ` + pgNow + ` + $6 + 1) THEN $9::text ELSE $7::text END,
    ready = CASE WHEN $6 = 0 AND attempts < max_attempts THEN 1 ELSE 0 END,
    run_at = ` + pgNow + ` + $6, due_at = ` + pgNow + ` + $6, lease_until = ` + pgNow + `, updated_at = ` + pgNow + pgFenceSQL,
	fenceFail: `UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = $6, updated_at = ` + pgNow + pgFenceSQL,
}

// pgFinishManySQL is FinishBatch on the server's clock as one statement at
// one instant, which it reads itself: each claim fenced on its own, as
// pgFenceSQL fences one.
const pgFinishManySQL = `
UPDATE leaseq_jobs j SET status = 'done', ready = 0, updated_at = t.now
FROM (SELECT coalesce($2::bigint, leaseq_now()) AS now) t,
     unnest($3::text[], $4::text[], $5::bigint[]) AS c(id, owner, token)
WHERE j.queue = $1 AND j.id = c.id AND j.owner = c.owner AND j.token = c.token AND j.status = 'leased'
  AND j.lease_until > t.now AND (j.deadline IS NULL OR j.deadline > t.now)
RETURNING j.id, j.owner, j.token, j.lease_until`

// finishMany runs FinishBatch's claims in pgFinishManySQL, and answers
// with what it did, as settle does a single call. A row is
// updated once however often the batch names its claim; as on SQLite,
// where the claims run in order, the first of them is the one accepted.
func (e *pgEngine) finishMany(ctx context.Context, q *Queue, fs []fenced) ([]settled, error) {
	ids, owners, tokens := make([]string, len(fs)), make([]string, len(fs)), make([]int64, len(fs))
	for i, f := range fs {
		ids[i], owners[i], tokens[i] = f.c.ID, f.c.Owner, f.c.Token
	}
	var out []settled
	err := e.answered(ctx, func(ctx context.Context, db execer) error {
		out = make([]settled, len(fs))
		rows, err := db.QueryContext(ctx, pgFinishManySQL, q.name, nil, ids, owners, tokens)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c Claim
			var leaseUntil int64
			if err := rows.Scan(&c.ID, &c.Owner, &c.Token, &leaseUntil); err != nil {
				return err
			}
			for i, f := range fs {
				if f.c.ID == c.ID && f.c.Owner == c.Owner && f.c.Token == c.Token {
					out[i] = settled{ok: true, leaseUntil: leaseUntil}
					break
				}
			}
		}
		return rows.Err()
	}, e.settledFound(q, fs, &out))
	return out, err
}

// settledFound is the found of answered for fenced calls fs of q in one
// autocommitted statement: it reads their outcome into *out (settledRows),
// and reports whether any of them bears its mark.
func (e *pgEngine) settledFound(q *Queue, fs []fenced, out *[]settled) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		rs, err := e.settledRows(ctx, q, fs)
		if err != nil {
			return false, err
		}
		*out = rs
		return slices.ContainsFunc(rs, func(r settled) bool { return r.ok }), nil
	}
}

// pgLockSQL locks the rows of jobs of a queue, in ID order, so that the
// calls on them read the clock only once they hold them (rule 8).
const pgLockSQL = `SELECT 1 FROM leaseq_jobs WHERE queue = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`

// lockJobs locks the rows of the jobs ids of q in tx.
func lockJobs(ctx context.Context, tx execer, q *Queue, ids ...string) error {
	_, err := tx.ExecContext(ctx, pgLockSQL, q.name, ids)
	return err
}

// settle runs a single fenced call judged by the server's clock as one
// statement, which reads the clock itself, and answers with what it did
// (answered; cut short, it reads its row: settledFound). Anything else runs in one
// transaction at one instant, the queue's clock or the server's, read once
// the transaction holds the calls' rows (rule 8): an injected clock is read
// in this process, and read before the statement it would be stale by
// however long the statement then took to reach the row — waiting for
// another transaction's lock on it, or in a process stalled between the
// reading and the sending — and a call could then be judged, at its earlier
// instant, on a row that a call judged later had already changed.
//
// On the server's clock, a worker pool's finish joins its queue's pool step
// (postgres_pool.go), and is run alone if the step did not accept it; a
// batch of finishes is one statement (finishMany).
func (e *pgEngine) settle(ctx context.Context, q *Queue, fs []fenced, share sharing) ([]settled, error) {
	if share == sharePool && q.serverClock && len(fs) == 1 && fs[0].kind == fenceFinish {
		// A finish the step did not accept was refused, or its row was
		// held by another transaction, which the step skips rather than
		// wait for (rule 39): alone, below, it waits for the row.
		r, err := e.pool(q).finish(ctx, fs[0].c)
		if err != nil || r.ok {
			return []settled{r}, err
		}
	}
	if len(fs) > 1 && q.serverClock && !slices.ContainsFunc(fs, func(f fenced) bool { return f.kind != fenceFinish }) {
		return e.finishMany(ctx, q, fs)
	}
	out := make([]settled, len(fs))
	if len(fs) == 1 && q.serverClock {
		err := e.answered(ctx, func(ctx context.Context, db execer) error {
			var err error
			out[0], err = fencedTx(ctx, db, q, postgresFenced[fs[0].kind], fs[0], nil)
			return err
		}, e.settledFound(q, fs, &out))
		return out, err
	}
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.c.ID
	}
	err := e.write(ctx, func(ctx context.Context, tx execer) error {
		if err := lockJobs(ctx, tx, q, ids...); err != nil {
			return err
		}
		now, err := txNow(ctx, tx, q)
		if err != nil {
			return err
		}
		for i, f := range fs {
			var err error
			if out[i], err = fencedTx(ctx, tx, q, postgresFenced[f.kind], f, now); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// txNow is the queue's clock, or the server's read in tx: on the
// transaction at hand, so that a call needs no second connection for it (a
// pool of one connection would have none to give).
func txNow(ctx context.Context, tx execer, q *Queue) (int64, error) {
	if !q.serverClock {
		return q.now(), nil
	}
	var ms int64
	err := tx.QueryRowContext(ctx, "SELECT leaseq_now()").Scan(&ms)
	return ms, err
}

// operate runs an operator's update, and reads the row when it matched
// none, in one transaction, at the queue's clock (or the server's, read in
// the transaction) once the transaction holds the row (rule 8; see
// settle).
func (e *pgEngine) operate(ctx context.Context, q *Queue, o operation) (refusal, error) {
	var r refusal
	err := e.write(ctx, func(ctx context.Context, tx execer) error {
		if err := lockJobs(ctx, tx, q, o.id); err != nil {
			return err
		}
		now, err := txNow(ctx, tx, q)
		if err != nil {
			return err
		}
		r, err = operateTx(ctx, tx, q, o, now)
		return err
	})
	return r, err
}

// pgPurgeSQL is purgeSQL as one statement: it locks a chunk, remembers the
// last token of each of its jobs that was ever claimed, and deletes it.
// purgeSQL's two statements would each see the rows as they are when it
// starts (READ COMMITTED), so a job that ended between them would be
// deleted with its token forgotten, and its ID enqueued again would hand
// out old tokens again (rule 21). The statements of one statement share
// one snapshot; the lock keeps the chunk as it is until the deletion.
const pgPurgeSQL = `
WITH doomed AS (
    SELECT seq, queue, id, token FROM leaseq_jobs
    WHERE queue = $1 AND status = $2 AND status IN ('done', 'quarantined') AND updated_at < $3
    ORDER BY updated_at LIMIT $4
    FOR UPDATE),
remembered AS (
    INSERT INTO leaseq_purged (queue, id, token)
    SELECT queue, id, token FROM doomed WHERE token > 0
    ON CONFLICT (queue, id) DO UPDATE SET token = excluded.token)
DELETE FROM leaseq_jobs WHERE seq IN (SELECT seq FROM doomed)`

// purgeChunk deletes one chunk in a transaction of its own, and returns
// how many jobs it deleted: none when it fails.
func (e *pgEngine) purgeChunk(ctx context.Context, q *Queue, st Status, before int64) (int, error) {
	var n int
	err := e.write(ctx, func(ctx context.Context, tx execer) error {
		res, err := tx.ExecContext(ctx, pgPurgeSQL, q.name, st, before, purgeChunk)
		if err != nil {
			return err
		}
		affected, err := res.RowsAffected()
		n = int(affected)
		return err
	})
	if err != nil {
		return 0, err // not committed, or not known to be (write)
	}
	return n, nil
}

func (e *pgEngine) read(ctx context.Context, fn func(db execer) error) error {
	return pgError(retrySerialization(ctx, func() error { return fn(pgDB{e.dbh}) }))
}

// write runs fn in one READ COMMITTED transaction and commits it, retrying
// the whole transaction on a serialization failure or a deadlock (rule 41),
// and answers with what the transaction did. As on SQLite (tx.go), a
// transaction whose context ended before COMMIT is rolled back, never
// committed, and the call answers ctx's error. A context that ends while a
// statement or the COMMIT runs gives it pgAnswerWait more to answer, as
// answered gives an enqueue's statement, so that the call still returns
// soon after ctx ends while the server does not answer (rule 24). A COMMIT
// that fails once ctx has ended — cut short, or its connection lost — may
// have been carried out by the server all the same: the call then finds out
// whether the transaction committed (committed), and answers nil, fn's
// results standing, if it did, ctx's error if not (errors table: ctx's
// error only when nothing of the call was written), and, when even that
// read gets no answer, that it is not known. A COMMIT that fails while ctx
// runs is rule 41's lost connection: the driver's error.
func (e *pgEngine) write(ctx context.Context, fn txFunc) error {
	var mark int64
	var xid string
	unsure := false
	err := retrySerialization(ctx, func() error {
		mark, xid, unsure = rand.Int64(), "", false
		_, err := graced(ctx, func(sctx context.Context) error {
			tx, err := e.dbh.BeginTx(sctx, nil)
			if err != nil {
				return err
			}
			err = tx.QueryRowContext(sctx, pgMarkSQL, mark).Scan(&xid)
			if err == nil {
				err = fn(sctx, pgDB{tx})
			}
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				tx.Rollback()
				return err
			}
			err = tx.Commit()
			unsure = err != nil && ctx.Err() != nil
			return err
		})
		return err
	})
	if !unsure || ctx.Err() == nil {
		return pgError(err)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pgAnswerWait)
	defer cancel()
	done, ferr := e.committed(fctx, mark, xid)
	switch {
	case ferr != nil:
		return outcomeUnknown(ctx, ferr)
	case done:
		return nil
	}
	return ctx.Err()
}

// pgMarkSQL marks a transaction of write for the read that finds out
// whether it committed: it takes the advisory lock of the random key $1
// until it ends, and returns its transaction ID. No other transaction
// holds the key; were it held, the transaction would fail rather than run
// unmarked.
const pgMarkSQL = `SELECT pg_current_xact_id()::text WHERE pg_try_advisory_xact_lock($1::bigint)`

// pgCommittedSQL waits for the transaction marked $1 to end, then says
// what became of the transaction $2: committed, aborted (or NULL, were it
// too old to tell). The lock is taken in the materialized CTE, before the
// status is read from its row.
const pgCommittedSQL = `WITH ended AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($1::bigint))
SELECT pg_xact_status($2::xid8) FROM ended`

// committed reports whether the transaction of write marked mark, with the
// ID xid, committed: one read, which waits for the transaction to end
// first — a COMMIT the server has not yet carried out may still be. Each
// transaction of write ends in its own COMMIT or abort, so the status of
// its ID says exactly whether the call was written, whatever happened to
// its rows since.
func (e *pgEngine) committed(ctx context.Context, mark int64, xid string) (bool, error) {
	var status sql.NullString
	if err := e.dbh.QueryRowContext(ctx, pgCommittedSQL, mark, xid).Scan(&status); err != nil {
		return false, err
	}
	switch status.String {
	case "committed":
		return true, nil
	case "aborted":
		return false, nil
	}
	return false, fmt.Errorf("transaction %s is %q", xid, status.String)
}

// pgDB runs statements written for either engine on PostgreSQL: ?N
// placeholders, as the shared statements use, become $N.
type pgDB struct{ ex execer }

func (p pgDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.ex.ExecContext(ctx, pgPlaceholders(query), args...)
}

func (p pgDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.ex.QueryContext(ctx, pgPlaceholders(query), args...)
}

func (p pgDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.ex.QueryRowContext(ctx, pgPlaceholders(query), args...)
}

var (
	placeholder = regexp.MustCompile(`\?([0-9]+)`)
	// pgRewritten maps a query to its rewriting. Only the package's own
	// statements are rewritten, a fixed set.
	pgRewritten sync.Map
)

// pgPlaceholders rewrites SQLite's ?N placeholders as PostgreSQL's $N. None
// of the queue's statements has a ? anywhere else.
func pgPlaceholders(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	if s, ok := pgRewritten.Load(query); ok {
		return s.(string)
	}
	s := placeholder.ReplaceAllString(query, `$$$1`)
	pgRewritten.Store(query, s)
	return s
}

// SQLSTATE codes the engine acts on (PostgreSQL's appendix A).
const (
	sqlStateUniqueViolation      = "23505"
	sqlStateSerializationFailure = "40001"
	sqlStateDeadlockDetected     = "40P01"
	sqlStateUndefinedTable       = "42P01"
)

// sqlState is the SQLSTATE of err, from the SQLState method PostgreSQL
// drivers give their errors (pgx's *pgconn.PgError, lib/pq's *pq.Error), or
// "". No driver is imported for it.
func sqlState(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}

// pgError maps a unique violation to ErrDuplicate (rule 41); every other
// error is returned as it is.
func pgError(err error) error {
	if err != nil && sqlState(err) == sqlStateUniqueViolation {
		return fmt.Errorf("%w (%v)", ErrDuplicate, err)
	}
	return err
}

// retryable reports whether err is a serialization failure or a deadlock:
// the server undid the whole transaction, so running it again is safe
// (rule 41).
func retryable(err error) bool {
	s := sqlState(err)
	return s == sqlStateSerializationFailure || s == sqlStateDeadlockDetected
}

// retrySerialization runs op until it returns something other than a
// retryable error, or ctx ends.
func retrySerialization(ctx context.Context, op func() error) error {
	return retryWhile(ctx, retryable, op)
}
