package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"sync"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SchemaVersion is the schema version this engine writes to a database's
// PRAGMA user_version (schema_version_set.sql says the same number).
const SchemaVersion = 4

var _ engine.Engine = (*Engine)(nil)

// Engine is what every Queue on one *sql.DB shares: the writer's turn, the
// pinned write connection with its prepared statements, and the
// group-commit list. SQLite has one writer per file; Queues that took
// turns on the file lock instead of here would poll it with sleeps and each
// commit alone, so four named queues on one database would be far slower
// together than one. Sharing makes them as fast together as one queue.
type Engine struct {
	dbh  *sql.DB
	file string // the database file's path, as SQLite resolved it
	// writer lets one write transaction run at a time; see takeTurn.
	writer chan struct{}
	// wc is the pinned write connection, guarded by writer; see writeConn.
	wc        *writeConn
	writeIdle time.Duration // writeConnIdle when the engine was made
	// group gathers concurrent single calls into shared transactions; see
	// group.go.
	group group
	// queues counts the open Queues on the engine, guarded by enginesMu.
	// When the last one closes, the engine lets go of its connection.
	queues int
	// closed is set, under the writer's turn, when the last Queue closed.
	closed bool
	// wake lets a call that makes a job claimable wake this process's
	// waiting workers of that queue.
	wake engine.Wakers
	// reads are the read statements prepared on db (see readStmt).
	readsMu sync.Mutex
	reads   map[string]*sql.Stmt
	// ident is the database's main file (EnqueueTx; see DatabaseForeign).
	ident identity
	// watch finds other processes' commits while a pool runs (watch.go).
	watch watcher
	// schema is the create script SchemaMigrate runs: the root's
	// schema.sql, the one copy of the schema, handed to New.
	schema string
}

var (
	enginesMu sync.Mutex
	engines   = map[*sql.DB]*Engine{}
)

// Handles reports whether db runs on modernc's driver, the one this engine
// is for. For the root's choice of engine.
func Handles(db *sql.DB) bool {
	_, ok := db.Driver().(*sqlite.Driver)
	return ok
}

// New returns db's engine, shared by every open Queue on db: made by the
// first, counted for each, let go by the last Release. It refuses a
// database that is not a file. schema is the create script of
// SchemaVersion, the root's schema.sql: the schema lives there, beside the
// API that documents it, and not in this package. For the root's New and
// Migrate.
func New(ctx context.Context, db *sql.DB, schema string) (*Engine, error) {
	if e := shared(db); e != nil {
		return e, nil // checked by the first; a read now could wait for a lock
	}
	file, err := fileProblem(ctx, db)
	if err != nil {
		return nil, engine.PoolWait(db, err)
	}
	enginesMu.Lock()
	defer enginesMu.Unlock()
	e := engines[db]
	if e == nil {
		e = &Engine{dbh: db, file: file, writer: make(chan struct{}, 1), writeIdle: writeConnIdle, schema: schema}
		engines[db] = e
	}
	e.queues++
	return e, nil
}

// shared returns db's engine, counted for one more Queue, or nil if it has
// none.
func shared(db *sql.DB) *Engine {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	e := engines[db]
	if e != nil {
		e.queues++
	}
	return e
}

// fileProblem refuses a database that is not a file: SQLite gives each
// pooled connection of an in-memory or temporary database its own empty
// one, so a queue on it would lose its jobs between two calls. It returns
// the file's path.
func fileProblem(ctx context.Context, db *sql.DB) (string, error) {
	file, err := retryBusyOnce(ctx, func() (string, error) { return mainFile(ctx, db) })
	if err == nil && file == "" {
		err = engine.Invalid("the database is in memory or temporary, not a file; each pooled connection would see its own")
	}
	return file, err
}

// Release ends one Queue's use of e. The last one gives the write
// connection back to the *sql.DB, so that db.Close can close the file; a call
// still in the group list then gets ErrClosed.
func (e *Engine) Release() {
	enginesMu.Lock()
	e.queues--
	last := e.queues == 0
	if last {
		delete(engines, e.dbh)
	}
	enginesMu.Unlock()
	if !last {
		return
	}
	e.writer <- struct{}{}
	defer func() { <-e.writer }()
	e.closed = true
	if e.wc != nil {
		e.dropWriteConn(e.wc)
	}
	e.readsMu.Lock()
	for _, st := range e.reads {
		st.Close()
	}
	e.reads = nil
	e.readsMu.Unlock()
}

// DB is the database e runs on.
func (e *Engine) DB() *sql.DB { return e.dbh }

// Wakers are the wake-ups of this process's idle workers on e's database.
func (e *Engine) Wakers() *engine.Wakers { return &e.wake }

// Usable is the error of a call after db.Close, or nil.
func (e *Engine) Usable() error { return engine.Closed(e.dbh) }

// ServerClock is nil: SQLite keeps no clock of its own, so a Queue without
// one uses the host's.
func (e *Engine) ServerClock() engine.TimeSource { return nil }

// SchemaCurrent is SchemaVersion.
func (e *Engine) SchemaCurrent() int { return SchemaVersion }

// WaitingCalls reports how many calls wait in the group-commit list, so
// that a test can make sure they have all queued up before it lets the
// committer take the lock. For the root's tests.
func (e *Engine) WaitingCalls() int {
	g := &e.group
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, op := range g.waiting {
		if op.state == opWaiting {
			n++
		}
	}
	return n
}

//go:embed sql/*.sql
var files embed.FS

// statements are the engine's SQL, one statement (or script) per file.
var statements = engine.MustSQL("sqlite", files, "sql")

// stmt is the SQL of the statement name; an unknown name is a bug of this
// package, found by its tests: it panics (engine.SQL.Stmt).
func stmt(name string) string { return statements.Stmt(name) }

// Statements returns the engine's statements, parsed from its files, by
// name. For the root's tests (the query plans) and tools.
func Statements() map[string]engine.Statement { return statements.All() }

// interpretError maps the driver's errors onto the engine's: a taken
// (queue, id) is engine.ErrDuplicate (the failed INSERT changed nothing).
// The rest is returned as it is: a database closed with db.Close is the
// driver's error, not engine.ErrClosed, which is the engine's own answer
// once its last Queue closed (see writeConn).
func interpretError(err error) error {
	if isCode(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) || isCode(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) {
		return engine.ErrDuplicate
	}
	return err
}
