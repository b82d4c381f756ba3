package leaseq

import (
	"database/sql"

	"github.com/leaseq/leaseq/internal/sqlite"
)

// JournalMode is the rollback-journal mode Open sets. See docs/guarantees.md, "Why a rollback journal", for the measurements it was chosen by.
const JournalMode = sqlite.JournalMode

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
	db, err := sqlite.Open(path)
	if err != nil {
		return nil, opError("open", job(path), err)
	}
	return db, nil
}

// OpenReadOnly opens the existing SQLite database at path read-only
// (mode=ro), with the busy timeout of [Open]: nothing done through it
// writes to the file, so it suits a [New] with [Options.ReadOnly]. It
// refuses what Open refuses, and a file that does not exist.
func OpenReadOnly(path string) (*sql.DB, error) {
	db, err := sqlite.OpenReadOnly(path)
	if err != nil {
		return nil, opError("open", job(path), err)
	}
	return db, nil
}

// SchemaVersion is the schema version this package writes to a SQLite
// database's PRAGMA user_version. [New] upgrades an older database, keeping
// every job, and refuses a newer one rather than guess at columns it does
// not know. PostgreSQL's schema is numbered on its own ([Migrate] says
// which version it left), as it changed without SQLite's.
const SchemaVersion = sqlite.SchemaVersion
