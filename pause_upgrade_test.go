package leaseq_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestUpgradeFromV3: a version-3 database (what New wrote before
// leaseq_paused: the current schema without that table, at user_version
// 3) is upgraded to SchemaVersion with every row as it was, and its queue
// can be paused and resumed.
func TestUpgradeFromV3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v3.db")
	f := openFixture(t, sqliteEngine, path, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	f.q.Close()
	raw := rawDB(t, path)
	for _, s := range []string{"DROP TABLE leaseq_paused", "PRAGMA user_version = 3"} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	rows := dumpQuery(t, raw, "SELECT * FROM leaseq_jobs ORDER BY seq")
	g := openFixture(t, sqliteEngine, path, leaseq.Options{})
	if v := userVersion(t, raw); v != leaseq.SchemaVersion {
		t.Fatalf("user_version after New: %d, want %d", v, leaseq.SchemaVersion)
	}
	if got := dumpQuery(t, raw, "SELECT * FROM leaseq_jobs ORDER BY seq"); got != rows {
		t.Fatalf("the upgrade changed rows:\n got\n%s want\n%s", got, rows)
	}
	if err := g.q.Pause(g.ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.claim("w", time.Second); ok {
		t.Fatal("claimed from a queue paused after the upgrade")
	}
	if err := g.q.Resume(g.ctx); err != nil {
		t.Fatal(err)
	}
	if c := g.mustClaim("w", time.Second); c.ID != "a" {
		t.Fatalf("claimed %s, want a", c.ID)
	}
}
