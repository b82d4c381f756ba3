package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/robfig/cron/v3"
)

// This file covers periodic jobs (rule 53 in docs/rules.md) on the manual
// clock: which slots a pool enqueues, before, exactly at and after each,
// across restarts, downtime and purges. periodic_process_test.go runs them
// in several processes on real time.

// passWatch sees the passes of one loop of the pools of one owner.
type passWatch struct{ ch chan time.Time }

// watchPasses watches the passes of loop ("periodic" or "retention") of
// the pools of owner until the test ends.
func watchPasses(t *testing.T, loop, owner string) *passWatch {
	w := &passWatch{ch: make(chan time.Time, 64)}
	t.Cleanup(leaseq.OnTimedPass(loop, owner, func(now time.Time) {
		select {
		case w.ch <- now:
		default: // the pool passes again soon, at the same instant
		}
	}))
	return w
}

// at waits until a pass judged at the instant at has ended.
func (w *passWatch) at(t *testing.T, at time.Time) {
	t.Helper()
	limit := time.After(20 * time.Second)
	for {
		select {
		case now := <-w.ch:
			if now.Equal(at) {
				return
			}
		case <-limit:
			t.Fatalf("timed out after 20s waiting for a pass at %s", at.Format(time.RFC3339Nano))
		}
	}
}

// ids lists the IDs of the fixture's queue's jobs, sorted.
func (f *fixture) ids() []string {
	f.t.Helper()
	rows, err := f.db.Query(f.e.rebind("SELECT id FROM leaseq_jobs WHERE queue = ?1"), f.q.Name())
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// wantIDs fails the test unless the queue's jobs are ids, at the instant
// the pool last judged at.
func (f *fixture) wantIDs(when string, ids ...string) {
	f.t.Helper()
	if got := f.ids(); !slices.Equal(got, ids) {
		f.t.Fatalf("%s: jobs %q, want %q", when, got, ids)
	}
}

// periodicPool runs Work on f's queue as owner with ps and no retention,
// polling every 5ms of real time so that it notices the manual clock's
// moves; handlers finish at once.
func periodicPool(t *testing.T, f *fixture, owner string, ps ...leaseq.Periodic) *worker {
	return runWork(t, f.q, leaseq.WorkerOptions{Owner: owner, PollInterval: 5 * time.Millisecond,
		Retention: leaseq.Retention{Off: true}, Periodic: ps},
		func(context.Context, leaseq.Claim) error { return nil })
}

// at10 is 10:MM:SS.mmm on the fixture's day.
func at10(m, s, msec int) time.Time { return time.Date(2026, 1, 1, 10, m, s, msec*1e6, time.UTC) }

// TestPeriodicSlots: a new Periodic's first slot is the first after it was
// first seen (not the slot in progress); each slot's job is enqueued once
// the queue's clock reaches the slot, not 1ms before, with ID Name@slot and
// RunAt the slot; after downtime over five slots only the latest is
// enqueued, once.
func TestPeriodicSlots(t *testing.T) { forEngines(t, testPeriodicSlots) }

func testPeriodicSlots(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	owner := "periodic-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	tick := leaseq.Periodic{Name: "tick", Schedule: leaseq.Every(time.Minute),
		Job: leaseq.Job{Qty: 2, Priority: 5, Payload: []byte("p"), MaxAttempts: 4}}
	step := func(at time.Time, ids ...string) {
		t.Helper()
		f.clock.Set(at)
		passes.at(t, at)
		f.wantIDs(at.Format("15:04:05.000"), ids...)
	}
	f.clock.Set(at10(0, 0, 0)) // exactly on a slot, which is in progress: not run
	w := periodicPool(t, f, owner, tick)
	passes.at(t, at10(0, 0, 0))
	f.wantIDs("10:00:00.000, first seen")
	step(at10(0, 59, 999))
	s1 := "tick@2026-01-01T10:01:00Z"
	step(at10(1, 0, 0), s1)
	step(at10(1, 0, 1), s1)
	step(at10(1, 59, 999), s1)
	s2 := "tick@2026-01-01T10:02:00Z"
	step(at10(2, 0, 0), s1, s2)
	got := f.get(s1)
	if !got.RunAt.Equal(at10(1, 0, 0)) || !got.EnqueuedAt.Equal(at10(1, 0, 0)) || got.Qty != 2 || got.Priority != 5 ||
		string(got.Payload) != "p" || got.MaxAttempts != 4 {
		t.Fatalf("slot job %s; want the template's fields, RunAt and EnqueuedAt the slot", fmtRow(got))
	}

	// Down over five slots (10:03 … 10:07): only 10:07's job, once.
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(at10(7, 30, 0))
	w = periodicPool(t, f, owner, tick)
	s7 := "tick@2026-01-01T10:07:00Z"
	passes.at(t, at10(7, 30, 0))
	f.wantIDs("10:07:30 after downtime", s1, s2, s7)
	step(at10(7, 59, 999), s1, s2, s7)
	// A pool held up over several slots (the clock jumps) enqueues only the latest.
	s10 := "tick@2026-01-01T10:10:00Z"
	step(at10(10, 0, 0), s1, s2, s7, s10)
	// A restart within a slot whose job exists enqueues nothing again.
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(at10(10, 30, 0))
	periodicPool(t, f, owner, tick)
	step(at10(10, 30, 1), s1, s2, s7, s10)
}

// TestPeriodicPurgedSlot: a slot whose job was purged is not enqueued again
// by a pool that starts within it; a Periodic added beside it starts at its
// next slot, not the one in progress.
func TestPeriodicPurgedSlot(t *testing.T) { forEngines(t, testPeriodicPurgedSlot) }

func testPeriodicPurgedSlot(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	owner := "purged-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	tick := leaseq.Periodic{Name: "tick", Schedule: leaseq.Every(time.Minute)}
	f.clock.Set(at10(0, 30, 0))
	w := periodicPool(t, f, owner, tick)
	passes.at(t, at10(0, 30, 0))
	f.clock.Set(at10(1, 0, 0))
	passes.at(t, at10(1, 0, 0))
	s1 := "tick@2026-01-01T10:01:00Z"
	waitUntil(t, 20*time.Second, "the slot's job done", func() bool { return f.get(s1).Status == leaseq.StatusDone })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if n := f.purge(at10(2, 0, 0)); n != 1 {
		t.Fatalf("Purge: %d jobs, want 1", n)
	}
	f.clock.Set(at10(1, 30, 0))
	other := leaseq.Periodic{Name: "other", Schedule: leaseq.Every(time.Minute)}
	periodicPool(t, f, owner, tick, other)
	passes.at(t, at10(1, 30, 0))
	f.wantIDs("10:01:30, restarted after the purge")
	if _, err := f.q.Get(f.ctx, s1); !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatalf("Get(%q) after the purge and a restart: %v, want ErrNotFound", s1, err)
	}
	f.clock.Set(at10(2, 0, 0))
	passes.at(t, at10(2, 0, 0))
	f.wantIDs("10:02", "other@2026-01-01T10:02:00Z", "tick@2026-01-01T10:02:00Z")
}

// TestPeriodicMilliseconds: a slot that is not a whole second has
// milliseconds in its ID; one that is has none. Every's slots are
// multiples of its interval since the Unix epoch.
func TestPeriodicMilliseconds(t *testing.T) { forEngines(t, testPeriodicMilliseconds) }

func testPeriodicMilliseconds(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	owner := "ms-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	f.clock.Set(ms(1))
	periodicPool(t, f, owner, leaseq.Periodic{Name: "x", Schedule: leaseq.Every(1500 * time.Millisecond)})
	passes.at(t, ms(1))
	f.clock.Set(ms(1500))
	passes.at(t, ms(1500))
	f.clock.Set(ms(3000))
	passes.at(t, ms(3000))
	f.wantIDs("3s", "x@2026-01-01T00:00:01.500Z", "x@2026-01-01T00:00:03Z")
}

// TestEvery: Every's next slot is strictly after the instant given, on the
// multiples of d since the epoch, also before it.
func TestEvery(t *testing.T) {
	e := leaseq.Every(time.Minute)
	for _, tc := range []struct{ after, want time.Time }{
		{at10(0, 0, 0), at10(1, 0, 0)},
		{at10(0, 59, 999), at10(1, 0, 0)},
		{at10(0, 0, 1), at10(1, 0, 0)},
		{at10(0, 0, 0).Add(-time.Nanosecond), at10(0, 0, 0)},
		{time.Unix(-30, 0), time.Unix(0, 0)},
		{time.Unix(-60, 0), time.Unix(0, 0)},
		{time.Unix(-61, 0), time.Unix(-60, 0)},
	} {
		if got := e.Next(tc.after); !got.Equal(tc.want) {
			t.Errorf("Every(1m).Next(%s) = %s, want %s", tc.after, got, tc.want)
		}
	}
}

// TestPeriodicInvalid: Work refuses a bad Periodic or Retention at once
// with ErrInvalid, and writes nothing.
func TestPeriodicInvalid(t *testing.T) { forEngines(t, testPeriodicInvalid) }

func testPeriodicInvalid(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	every := leaseq.Every(time.Minute)
	long := make([]byte, leaseq.MaxIDLen-24)
	for i := range long {
		long[i] = 'n'
	}
	for _, tc := range []struct {
		name string
		opts leaseq.WorkerOptions
	}{
		{"empty Name", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Schedule: every}}}},
		{"duplicate Name", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Name: "a", Schedule: every}, {Name: "a", Schedule: every}}}},
		{"nil Schedule", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Name: "a"}}}},
		{"Name too long for its IDs", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Name: string(long), Schedule: every}}}},
		{"Every(0)", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Name: "a", Schedule: leaseq.Every(0)}}}},
		{"Every(1.5ms)", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Name: "a", Schedule: leaseq.Every(1500 * time.Microsecond)}}}},
		{"Job.ID set", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Name: "a", Schedule: every, Job: leaseq.Job{ID: "x"}}}}},
		{"Job.Deadline set", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Name: "a", Schedule: every, Job: leaseq.Job{Deadline: ms(1e9)}}}}},
		{"Job.Priority out of range", leaseq.WorkerOptions{Periodic: []leaseq.Periodic{{Name: "a", Schedule: every, Job: leaseq.Job{Priority: 101}}}}},
		{"negative Retention.Done", leaseq.WorkerOptions{Retention: leaseq.Retention{Done: -time.Second}}},
		{"negative Retention.Quarantined", leaseq.WorkerOptions{Retention: leaseq.Retention{Quarantined: -time.Second}}},
	} {
		tc.opts.Owner = "w"
		before := f.snapshot()
		err := f.q.Work(context.Background(), tc.opts, func(context.Context, leaseq.Claim) error { return nil })
		if !errors.Is(err, leaseq.ErrInvalid) {
			t.Errorf("%s: Work returned %v, want ErrInvalid", tc.name, err)
		}
		f.unchanged(before, fmt.Sprintf("Work with %s", tc.name))
	}
	// The longest Name that fits is accepted.
	ok := leaseq.Periodic{Name: string(long[:len(long)-1]), Schedule: every}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.q.Work(ctx, leaseq.WorkerOptions{Owner: "w", Periodic: []leaseq.Periodic{ok}}, func(context.Context, leaseq.Claim) error { return nil }); err != nil {
		t.Fatalf("Work with a Name of %d bytes: %v", len(ok.Name), err)
	}
}

// TestPeriodicCron: a robfig/cron schedule is a Schedule; its slots are
// judged as Every's are.
func TestPeriodicCron(t *testing.T) { forEngines(t, testPeriodicCron) }

func testPeriodicCron(t *testing.T, eng testEngine) {
	sched, err := cron.ParseStandard("30 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, eng, leaseq.Options{})
	owner := "cron-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	at := func(h, m, s, msec int) time.Time { return time.Date(2026, 1, 1, h, m, s, msec*1e6, time.UTC) }
	f.clock.Set(at(3, 0, 0, 0))
	periodicPool(t, f, owner, leaseq.Periodic{Name: "nightly", Schedule: sched})
	passes.at(t, at(3, 0, 0, 0))
	f.clock.Set(at(3, 29, 59, 999))
	passes.at(t, at(3, 29, 59, 999))
	f.wantIDs("03:29:59.999")
	f.clock.Set(at(3, 30, 0, 0))
	passes.at(t, at(3, 30, 0, 0))
	f.wantIDs("03:30", "nightly@2026-01-01T03:30:00Z")
}

// bad is a Schedule that answers the zero time, its argument, or panics.
type bad string

func (b bad) Next(after time.Time) time.Time {
	switch b {
	case "zero":
		return time.Time{}
	case "same":
		return after
	}
	panic("cron parse")
}

// TestPeriodicNoSlot: a Schedule that yields no usable slot (the zero time,
// a time not after its argument) or panics logs one Error naming the
// Periodic and what the schedule answered; the pool goes on.
func TestPeriodicNoSlot(t *testing.T) { forEngines(t, testPeriodicNoSlot) }

func testPeriodicNoSlot(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	owner := "periodic-" + eng.name
	passes := watchPasses(t, "periodic", owner)
	sink, logger := newLogSink()
	f.clock.Set(at10(0, 0, 0))
	runWork(t, f.q, leaseq.WorkerOptions{Owner: owner, PollInterval: 5 * time.Millisecond, Logger: logger,
		Retention: leaseq.Retention{Off: true}, Periodic: []leaseq.Periodic{
			{Name: "zero", Schedule: bad("zero")}, {Name: "same", Schedule: bad("same")}, {Name: "panics", Schedule: bad("panics")}}},
		func(context.Context, leaseq.Claim) error { return nil })
	for _, name := range []string{"zero", "same", "panics"} {
		sink.waitFor(t, "the Error of "+name, func(e logEntry) bool { return e.attrs["periodic"].String() == name })
	}
	f.clock.Set(at10(1, 0, 0))
	passes.at(t, at10(1, 0, 0)) // a later pass logs nothing more
	for name, says := range map[string]string{"zero": "0001-01-01", "same": "for after", "panics": "panic: cron parse"} {
		got := sink.all(func(e logEntry) bool {
			return e.level == slog.LevelError && e.attrs["periodic"].String() == name
		})
		if len(got) != 1 || !strings.Contains(got[0].attrs["schedule_answered"].String(), says) {
			t.Errorf("Errors for %s: %v, want one saying %q; all:\n%s", name, got, says, sink)
		}
	}
}
