package leaseq_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
	sqlite3 "modernc.org/sqlite/lib"
)

// TestInTxDiskFull: a disk that fills inside InTx's fn, in a shared
// transaction, answers SQLITE_FULL, not an error about the savepoint the
// full disk took with it, and nothing of the call is kept.
func TestInTxDiskFull(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "full.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(DELETE)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: leaseq.NewManualClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}
	big := leaseq.Job{ID: "big", Payload: bytes.Repeat([]byte("x"), 64<<10)}
	err = q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error { return tx.Enqueue(ctx, big) })
	if sqliteCode(err) != sqlite3.SQLITE_FULL || strings.Contains(fmt.Sprint(err), "savepoint") {
		t.Fatalf("InTx on a full disk: got %v, want SQLITE_FULL", err)
	}
	if n := countRows(t, db); n != 0 {
		t.Fatalf("%d rows after the failed InTx, want 0", n)
	}
	if _, err := db.Exec("PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if err := q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error { return tx.Enqueue(ctx, big) }); err != nil {
		t.Fatalf("InTx after space was freed: %v", err)
	}
}
