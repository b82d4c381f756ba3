// Package sqlite is leaseq's engine for SQLite, through modernc.org/sqlite:
// the engine.Engine a Queue gets for a *sql.DB of that driver, with its SQL
// in the embedded files under sql/, one statement to a file.
//
// SQLite has one writer per file, so this engine is built around that
// writer rather than around the database's concurrency. Every Queue on one
// *sql.DB shares one Engine, which takes turns in-process for the write
// lock, keeps one write connection pinned with its statements prepared,
// begins every write transaction with BEGIN IMMEDIATE (database/sql cannot
// ask for it on a plain DSN), retries SQLITE_BUSY itself until the call's
// context ends, and gathers concurrent single calls into shared
// transactions with one commit (group commit, group.go). A COMMIT that
// fails is judged by the file's change counter, so a caller is never told
// "failed" about a write that is in the file. Claims take jobs from partial
// indexes that hold only claimable rows; sweeps for quarantine and for
// delayed jobs run in the claim's own transaction. It refuses databases
// that are not files and any journal mode but a rollback journal on disk.
//
// What it does worse than PostgreSQL's engine: writes from every process on
// the file are serialised, so throughput is bounded by one writer and its
// fsyncs (group commit lifts it only for calls of one process that arrive
// together), and under load a single call may wait for a whole shared
// transaction ahead of it; a worker pool's handlers' FinishTx functions run
// one after the other inside the pool's cycle (they would hold the writer
// one after the other anyway), so a slow one holds up the cycle's other
// results and its claim. A reader that leaves a *sql.Rows open makes
// every commit wait, and the database is one file on one machine: its
// workers are that machine's processes, with no failover.
package sqlite
