package leaseq_test

import (
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/robfig/cron/v3"
)

// TestPeriodicCancelledSlot: a slot's job cancelled before its first claim
// (token 0), then purged, is not enqueued again by a pool that starts
// within that slot: the queue remembers every purged ID, whatever its
// token (rule 53).
func TestPeriodicCancelledSlot(t *testing.T) { forEngines(t, testPeriodicCancelledSlot) }

func testPeriodicCancelledSlot(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	owner := "cancelled-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	s0, s1 := "tick@2026-01-01T10:00:00Z", "tick@2026-01-01T10:01:00Z"
	f.clock.Set(at10(1, 0, 0))
	f.enqueue(leaseq.Job{ID: s0}) // the Periodic was seen before
	f.enqueue(leaseq.Job{ID: s1, RunAt: at10(1, 0, 0)})
	f.cancel(s1, "not tonight")
	if n := f.purge(at10(2, 0, 0), leaseq.StatusQuarantined); n != 1 {
		t.Fatalf("Purge: %d jobs, want 1", n)
	}
	f.clock.Set(at10(1, 30, 0))
	periodicPool(t, f, owner, leaseq.Periodic{Name: "tick", Schedule: leaseq.Every(time.Minute)})
	passes.at(t, at10(1, 30, 0))
	f.wantIDs("10:01:30, a pool started after the cancelled slot's job was purged", s0)
}

// TestPeriodicKind: a slot's job has its template's Kind (rule 50), so a
// Mux routes it.
func TestPeriodicKind(t *testing.T) { forEngines(t, testPeriodicKind) }

func testPeriodicKind(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	owner := "kind-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	f.clock.Set(at10(0, 30, 0))
	periodicPool(t, f, owner, leaseq.Periodic{Name: "report", Schedule: leaseq.Every(time.Minute),
		Job: leaseq.Job{Kind: "nightly-report"}})
	passes.at(t, at10(0, 30, 0))
	f.clock.Set(at10(1, 0, 0))
	passes.at(t, at10(1, 0, 0))
	if got := f.get("report@2026-01-01T10:01:00Z"); got.Kind != "nightly-report" {
		t.Fatalf("slot job %s; want Kind nightly-report", fmtRow(got))
	}
}

// TestPeriodicPaused: a paused queue gets no slot's job; once resumed,
// only the latest slot missed while paused is enqueued, once, as after an
// outage (rules 53 and 54).
func TestPeriodicPaused(t *testing.T) { forEngines(t, testPeriodicPaused) }

func testPeriodicPaused(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	owner := "paused-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	f.clock.Set(at10(0, 30, 0))
	periodicPool(t, f, owner, leaseq.Periodic{Name: "tick", Schedule: leaseq.Every(time.Minute)})
	passes.at(t, at10(0, 30, 0))
	if err := f.q.Pause(f.ctx); err != nil {
		t.Fatal(err)
	}
	for m := 1; m <= 6; m++ {
		f.clock.Set(at10(m, 0, 0))
		passes.at(t, at10(m, 0, 0))
	}
	f.wantIDs("10:06 while paused")
	if err := f.q.Resume(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(at10(6, 30, 0))
	passes.at(t, at10(6, 30, 0))
	f.wantIDs("10:06:30, resumed", "tick@2026-01-01T10:06:00Z")
	f.clock.Set(at10(7, 0, 0))
	passes.at(t, at10(7, 0, 0))
	f.wantIDs("10:07", "tick@2026-01-01T10:06:00Z", "tick@2026-01-01T10:07:00Z")
}

// TestPeriodicZone: a cron schedule without a zone of its own runs on UTC
// whatever the zone of the clock's reading (a host's local zone): its
// first slot after a pool starts and every later one alike. One with
// CRON_TZ= runs on its own zone.
func TestPeriodicZone(t *testing.T) { forEngines(t, testPeriodicZone) }

func testPeriodicZone(t *testing.T, eng testEngine) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	plain, err := cron.ParseStandard("0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	zoned, err := cron.ParseStandard("CRON_TZ=America/New_York 0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, eng, leaseq.Options{})
	owner := "zone-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	at := func(d, h int) time.Time { return time.Date(2026, 1, d, h, 0, 0, 0, time.UTC).In(ny) }
	f.clock.Set(at(1, 1)) // the clock reads in New York's zone, as a host's local clock would
	periodicPool(t, f, owner, leaseq.Periodic{Name: "utc", Schedule: plain}, leaseq.Periodic{Name: "ny", Schedule: zoned})
	passes.at(t, at(1, 1))
	for _, h := range []int{3, 8} { // 03:00 UTC, then 03:00 EST
		f.clock.Set(at(1, h))
		passes.at(t, at(1, h))
	}
	f.clock.Set(at(2, 3))
	passes.at(t, at(2, 3))
	f.wantIDs("the second night", "ny@2026-01-01T08:00:00Z", "utc@2026-01-01T03:00:00Z", "utc@2026-01-02T03:00:00Z")
}
