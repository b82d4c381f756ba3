package leaseq_test

import (
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestUpgradeFromV3Pauses: a version-3 database (testdata/schema-v3.db,
// written before leaseq_paused) is upgraded to SchemaVersion, and its
// queue can then be paused and resumed: paused, nothing is claimed;
// resumed, the job due first is.
func TestUpgradeFromV3Pauses(t *testing.T) {
	path := copyV3(t)
	raw := rawDB(t, path)
	clock := leaseq.NewManualClock(v3t0.Add(time.Hour))
	g := openFixture(t, sqliteEngine, path, leaseq.Options{Clock: clock})
	g.clock = clock
	if v := userVersion(t, raw); v != leaseq.SchemaVersion {
		t.Fatalf("user_version after New: %d, want %d", v, leaseq.SchemaVersion)
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
	if _, ok := g.claim("w", time.Second); !ok {
		t.Fatalf("nothing claimed after Resume; rows:\n%s", g.dump())
	}
}
