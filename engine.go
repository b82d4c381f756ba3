package leaseq

import (
	"context"
	"database/sql"
	_ "embed" // schema.sql

	"github.com/leaseq/leaseq/internal/engine"
	"github.com/leaseq/leaseq/internal/postgres"
	"github.com/leaseq/leaseq/internal/sqlite"
)

// The engines live in their own packages behind one interface,
// [engine.Engine] (internal/engine): internal/sqlite and internal/postgres.
// Everything above the seam is here: validation, the clock, errors,
// wake-ups, the rules' wording, [Queue.Process] and [Queue.Work]. A call
// hands its engine plain rows, already valid, and gets plain rows back;
// the Queue method names the call around the engine's error.

// sqliteSchema is SQLite's schema, schema.sql: its one copy, kept beside
// the API it serves and handed to the SQLite engine, which runs it to
// create a database and in every upgrade. PostgreSQL's schema is its
// engine's own (internal/postgres/sql/schema.sql): it holds the functions
// that engine's statements call.
//
//go:embed schema.sql
var sqliteSchema string

// openEngine returns the engine for db, shared by every open Queue on it:
// SQLite for modernc's driver, PostgreSQL for a database/sql driver whose
// server says it is PostgreSQL (pgx's stdlib, lib/pq and the like; the
// package imports none of them).
func openEngine(ctx context.Context, db *sql.DB) (engine.Engine, error) {
	if sqlite.Handles(db) {
		return sqlite.New(ctx, db, sqliteSchema)
	}
	ok, version, err := postgres.Handles(ctx, db)
	switch {
	case err != nil:
		return nil, err // it names the question and the driver
	case !ok:
		return nil, invalid("database driver %T is neither modernc.org/sqlite nor a PostgreSQL driver (server: %q)",
			db.Driver(), version)
	}
	return postgres.New(db), nil
}

// ref is what the engine knows of q for a call: made once by New, so that
// a call does not allocate its clock's method value again.
func (q *Queue) ref() engine.Queue { return q.eq }
