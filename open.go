package leaseq

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"modernc.org/sqlite" // also registers the "sqlite" driver used by Open
	sqlite3 "modernc.org/sqlite/lib"
)

// JournalMode is the rollback-journal mode Open sets. See docs/guarantees.md, "Why a rollback journal", for the measurements it was chosen by.
const JournalMode = "PERSIST"

// Open opens the SQLite database at path (creating the file if it does not
// exist) with the settings leaseq is designed for, on every pooled
// connection: the rollback-journal mode [JournalMode], synchronous=FULL,
// foreign_keys on, a busy timeout of [BusyTimeoutDefault], and
// _txlock=immediate, so that the caller's own db.BeginTx starts with BEGIN
// IMMEDIATE (see [Queue.EnqueueTx]). It checks that the directory exists and
// that the file is a database, so a wrong path fails here rather than at the
// first Claim. An empty path or ":memory:" is refused with [ErrInvalid]:
// every pooled connection would get a database of its own.
//
// A caller may instead pass its own *sql.DB to [New], opened any way it
// likes; the queue retries lock waits itself and stays correct. Whatever
// opened it, two facts of the rollback journal apply to the caller's own
// use of the database: a *sql.Rows left open on the file makes every commit
// wait until it is closed (the queue's calls too: with a Background context,
// forever), and a COMMIT waits up to the busy timeout for readers whatever
// its context says.
//
// A file in WAL mode is refused with [ErrInvalid] and left as it is (rule
// 26): setting the rollback journal on it would convert it, under any
// process that has it open.
func Open(path string) (*sql.DB, error) {
	return open(path, dsn(path))
}

// OpenReadOnly opens the existing SQLite database at path read-only
// (mode=ro), with the busy timeout of [Open]: nothing done through it
// writes to the file, so it suits a [New] with [Options.ReadOnly]. It
// refuses what Open refuses, and a file that does not exist.
func OpenReadOnly(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil && path != "" && path != ":memory:" {
		return nil, opError("open", job(path), err)
	}
	return open(path, readOnlyDSN(path))
}

// open is Open and OpenReadOnly with the DSN they open path with.
func open(path, dsn string) (*sql.DB, error) {
	if path == "" || path == ":memory:" {
		return nil, opError("open", job(path), invalid("not a file path; an in-memory database would be a new, empty one on every pooled connection"))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return nil, opError("open", job(path), fmt.Errorf("directory %q: %w", dir, err))
	} else if !st.IsDir() {
		return nil, opError("open", job(path), fmt.Errorf("%q is not a directory: %w", dir, fs.ErrInvalid))
	}
	if err := walProblem(path); err != nil {
		return nil, opError("open", job(path), err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, opError("open", job(path), err)
	}
	// Reading the schema makes SQLite read the file header, which is where
	// "file is not a database" shows up.
	if _, err := db.Exec("SELECT count(*) FROM sqlite_schema"); err != nil {
		db.Close()
		return nil, opError("open", job(path), err)
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
		return invalid("the database is in WAL mode; leaseq needs a rollback journal (rule 26): " +
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
	return fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)", escapePath(path), BusyTimeoutDefault.Milliseconds())
}

// dsn is the file: URI for path with leaseq's pragmas. In a URI '?' and '#'
// end the path and '%' starts an escape, so those are escaped.
func dsn(path string) string {
	return fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(%s)"+
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate",
		escapePath(path), BusyTimeoutDefault.Milliseconds(), JournalMode)
}

// fileGone names the cause of a write that failed because the database
// file was replaced, moved or deleted under the open database: SQLite then
// keeps reading the old, unlinked file, and its own message ("attempt to
// write a readonly database", "disk I/O error") does not say why.
func (s *store) fileGone(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	_, statErr := os.Stat(s.file)
	switch {
	case se.Code() == sqlite3.SQLITE_READONLY_DBMOVED && statErr == nil:
		return fmt.Errorf("the database file %s was replaced or moved since it was opened: reopen it (%w)", s.file, err)
	case se.Code() == sqlite3.SQLITE_READONLY_DBMOVED || se.Code()&0xff == sqlite3.SQLITE_IOERR && errors.Is(statErr, fs.ErrNotExist):
		return fmt.Errorf("the database file %s was deleted since it was opened: reopen it (%w)", s.file, err)
	}
	return err
}
