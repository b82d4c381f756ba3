package leaseq

import (
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver used by Open
)

// JournalMode is the rollback-journal mode Open sets. See README, "Why a
// rollback journal", for the measurements it was chosen by.
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
func Open(path string) (*sql.DB, error) {
	if path == "" || path == ":memory:" {
		return nil, opError("open", job(path), invalid("not a file path; an in-memory database would be a new, empty one on every pooled connection"))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return nil, opError("open", job(path), fmt.Errorf("directory %q: %w", dir, err))
	} else if !st.IsDir() {
		return nil, opError("open", job(path), fmt.Errorf("%q is not a directory: %w", dir, fs.ErrInvalid))
	}
	db, err := sql.Open("sqlite", dsn(path))
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

// dsn is the file: URI for path with leaseq's pragmas. In a URI '?' and '#'
// end the path and '%' starts an escape, so those are escaped.
func dsn(path string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(%s)"+
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate",
		esc, BusyTimeoutDefault.Milliseconds(), JournalMode)
}
