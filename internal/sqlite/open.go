package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
	"modernc.org/sqlite" // also registers the "sqlite" driver used by Open
	sqlite3 "modernc.org/sqlite/lib"
)

// JournalMode is the rollback-journal mode Open sets. See
// docs/guarantees.md, "Why a rollback journal", for the measurements it was
// chosen by.
const JournalMode = "PERSIST"

// BusyTimeout is the busy timeout Open sets on every pooled connection:
// waits past it are retried by the engine until the call's context ends,
// so it bounds one wait inside SQLite, and how long a COMMIT may wait for
// readers to leave.
const BusyTimeout = 5 * time.Second

// Open opens the SQLite database at path (creating the file if it does not
// exist) with the settings leaseq is designed for, on every pooled
// connection: JournalMode, synchronous=FULL, foreign_keys on, BusyTimeout,
// and _txlock=immediate, so that the caller's own db.BeginTx starts with
// BEGIN IMMEDIATE. It refuses a path that is not a file, a directory that
// does not exist, a file in WAL mode (left as it is: setting the rollback
// journal on it would convert it, under any process that has it open) and
// a file that is not a database. Errors are returned as they are; the
// root's Open names the call.
func Open(path string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn(path))
	if err != nil {
		return nil, err
	}
	return open(path, pragmaConnector{c, openPragmas})
}

// OpenReadOnly opens the existing SQLite database at path read-only
// (mode=ro), with Open's busy timeout. It refuses what Open refuses, and a
// file that does not exist.
func OpenReadOnly(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil && path != "" && path != ":memory:" {
		return nil, err
	}
	c, err := sqlite.NewConnector(readOnlyDSN(path))
	if err != nil {
		return nil, err
	}
	return open(path, c)
}

// open is Open and OpenReadOnly with the connector they open path with.
func open(path string, c driver.Connector) (*sql.DB, error) {
	if path == "" || path == ":memory:" {
		return nil, engine.Invalid("not a file path; an in-memory database would be a new, empty one on every pooled connection")
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("directory %q: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%q is not a directory: %w", dir, fs.ErrInvalid)
	}
	if err := walProblem(path); err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	if _, err := db.Exec(stmt("open_check")); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// walProblem refuses a file whose header says WAL mode. It reads the header
// itself, without SQLite: the journal_mode pragma of Open's DSN would
// convert the file first (or, while another process has the WAL open, fail
// with a bare "database is locked").
func walProblem(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // Open creates it
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var h [100]byte
	if n, _ := io.ReadFull(f, h[:]); n < len(h) || string(h[:16]) != "SQLite format 3\x00" {
		return nil // empty, or not a database: SQLite's own check says which
	}
	// Bytes 18 and 19 are the file format's write and read versions: 2
	// means WAL.
	if h[18] == 2 || h[19] == 2 {
		return engine.Invalid("the database is in WAL mode; leaseq needs a rollback journal (rule 26): " +
			"once no process has it open, convert it with PRAGMA journal_mode=DELETE")
	}
	return nil
}

// escapePath escapes path for a file: URI, where '?' and '#' end the path
// and '%' starts an escape.
func escapePath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// readOnlyDSN is the file: URI for reading path without ever writing it.
func readOnlyDSN(path string) string {
	return fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)", escapePath(path), BusyTimeout.Milliseconds())
}

// dsn is the file: URI for path with those of leaseq's settings that read
// nothing of the file; openPragmas are the others.
func dsn(path string) string {
	return fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_txlock=immediate",
		escapePath(path), BusyTimeout.Milliseconds())
}

// openPragmas are the settings of Open's connections that read the schema
// first, so wait for another connection's lock on the file.
var openPragmas = []string{"PRAGMA journal_mode=" + JournalMode, "PRAGMA synchronous=FULL"}

// pragmaConnector opens Open's connections: pragmas run on each new one
// with the context of the call that needs it, so that their wait for
// another connection's lock ends with that context. In the DSN they would
// wait out the busy timeout whatever the context says — and database/sql
// throws away a connection whose statement a context interrupted, so under
// another connection's EXCLUSIVE lock every read after the first such one
// opened a connection, and overran a 1 s context by 4 s.
type pragmaConnector struct {
	driver.Connector
	pragmas []string
}

// Connect opens a connection and runs the pragmas on it.
func (c pragmaConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range c.pragmas {
		if _, err := conn.(driver.ExecerContext).ExecContext(ctx, p, nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// fileGone names the cause of a write that failed because the database
// file was replaced, moved or deleted under the open database: SQLite then
// keeps reading the old, unlinked file, and its own message ("attempt to
// write a readonly database", "disk I/O error") does not say why.
func (e *Engine) fileGone(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	_, statErr := os.Stat(e.file)
	switch {
	case se.Code() == sqlite3.SQLITE_READONLY_DBMOVED && statErr == nil:
		return fmt.Errorf("the database file %s was replaced or moved since it was opened: reopen it (%w)", e.file, err)
	case se.Code() == sqlite3.SQLITE_READONLY_DBMOVED || se.Code()&0xff == sqlite3.SQLITE_IOERR && errors.Is(statErr, fs.ErrNotExist):
		return fmt.Errorf("the database file %s was deleted since it was opened: reopen it (%w)", e.file, err)
	}
	return err
}
