package leaseq_test

import (
	"slices"
	"testing"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/engine"
	"github.com/leaseq/leaseq/internal/postgres"
	"github.com/leaseq/leaseq/internal/sqlite"
)

// engineOnly are the statements one engine has and the other has not, and
// why: everything else is named the same in both engines, so that a diff of
// the two files of one name shows how the engines differ.
var engineOnly = map[string][]string{
	// SQLite: its transactions are begun and ended by statements (BEGIN
	// IMMEDIATE on a pinned connection), a failed COMMIT is judged by the
	// file's change counter, its idle Claim is a read before the write
	// lock, its claim sweeps are statements of the claim's transaction
	// (leaseq_sweep on PostgreSQL), its purge is two statements under the
	// write lock, and its schema is versioned in PRAGMA user_version with
	// upgrades from versions 1, 2 and 3; the upgrades add the kind of
	// version 4 by a statement of their own (upgrade_v3), where
	// PostgreSQL's schema script adds it if missing. An InTx or FinishTx function runs in a savepoint
	// of its own (tx_savepoint*), as its transaction may be shared; on
	// PostgreSQL the transaction is its own, rolled back whole.
	"sqlite": {"begin", "change_counter", "claim_idle", "commit", "journal_mode", "main_file", "open_check",
		"promote", "purge_tokens", "rollback", "sweep_leased", "sweep_pending",
		"tx_savepoint", "tx_savepoint_release", "tx_savepoint_rollback",
		"upgrade_counts", "upgrade_v1", "upgrade_v1_copy", "upgrade_v2", "upgrade_v3",
		// A periodic slot's write reads the pause first under the write
		// lock; PostgreSQL reads it in slot_insert's statement.
		"slot_paused"},
	// PostgreSQL: commits cut short are found out by an advisory-lock mark
	// (mark, mark_wait, committed, settled, insert_written, insert_taken),
	// batches are one statement over arrays (insert_many, finish_many),
	// the worker pools' step is one statement (pool_step, lock), the clock
	// is the server's (now), the sweep is a function (sweep), the schema is
	// created under a lock in a table of its own (schema_lock,
	// schema_table), New asks the server what it is (version, identity),
	// and other processes hear of changes by NOTIFY (notify), where
	// SQLite's pools watch the file. The heartbeat locks the rows it extends
	// with SKIP LOCKED (lock_skip), so it never waits for a FinishTx that
	// holds one; SQLite has no row locks to skip.
	"postgres": {"committed", "finish_many", "identity", "insert_many", "insert_taken", "insert_written",
		"lock", "lock_skip", "mark", "mark_wait", "notify", "now", "pool_step", "schema_lock", "schema_table", "settled", "sweep",
		"version",
		// A periodic slot's write reads leaseq_purged again after its
		// insert, for a purge that committed while the insert ran; SQLite's
		// write lock lets no purge commit then.
		"slot_purged"},
}

// TestStatementNamesMatch: both engines have the same statements apart from
// engineOnly, and engineOnly lists no statement that both have or neither.
func TestStatementNamesMatch(t *testing.T) {
	sts := map[string]map[string]engine.Statement{"sqlite": sqlite.Statements(), "postgres": postgres.Statements()}
	// SQLite's schema is the root's schema.sql, which New hands the engine.
	sts["sqlite"]["schema"] = engine.Statement{Name: "schema", SQL: leaseq.SQLiteSchema}
	for name, other := range map[string]string{"sqlite": "postgres", "postgres": "sqlite"} {
		for _, st := range engine.Names(sts[name]) {
			_, both := sts[other][st]
			listed := slices.Contains(engineOnly[name], st)
			switch {
			case !both && !listed:
				t.Errorf("%s has %s.sql and %s has none: name it as the other engine does, or list it in engineOnly", name, st, other)
			case both && listed:
				t.Errorf("%s.sql is in both engines but listed as %s only", st, name)
			}
		}
		for _, st := range engineOnly[name] {
			if _, ok := sts[name][st]; !ok {
				t.Errorf("engineOnly lists %s.sql for %s, which has no such statement", st, name)
			}
		}
	}
}
