package leaseq

import (
	"fmt"
	"time"
)

// Periodic jobs without a leader (rule 53 in docs/rules.md): every pool
// that lists a Periodic offers the job of each slot, with the ID
// Name@<slot>, and the queue's unique IDs admit one.

// A Schedule yields the slots of a periodic job: Next returns the first
// slot strictly after after, or the zero time when there is none. The
// schedules of github.com/robfig/cron/v3 satisfy it. Slots are truncated to
// the millisecond, the resolution of the queue's clock.
type Schedule interface {
	Next(after time.Time) time.Time
}

// Every is the Schedule of the instants that are whole multiples of d since
// the Unix epoch (Every(time.Hour): every hour on the hour, UTC), so that
// every process agrees on them whenever it started. d must be a positive
// whole number of milliseconds, or Work refuses the Periodic as ErrInvalid.
func Every(d time.Duration) Schedule { return every{d} }

type every struct{ d time.Duration }

func (e every) Next(after time.Time) time.Time {
	step := e.d.Milliseconds()
	if step <= 0 {
		return time.Time{}
	}
	n := after.UnixMilli() / step
	if after.UnixMilli()%step < 0 { // floor, also before the epoch
		n--
	}
	return time.UnixMilli((n + 1) * step).UTC()
}

// problem says why e is not a schedule.
func (e every) problem() string {
	if e.d < time.Millisecond || e.d%time.Millisecond != 0 {
		return fmt.Sprintf("Every(%v): the interval must be a positive whole number of milliseconds", e.d)
	}
	return ""
}

// Periodic is a job that a pool enqueues on a schedule: for each slot t of
// Schedule, the job Job with the ID Name + "@" + t in RFC 3339 UTC
// (milliseconds when t is not a whole second, as in
// "nightly@2026-01-02T03:00:00Z") and RunAt t. Exactly one job per slot
// and Name, whatever the number of pools, processes and hosts that list it
// and however often they restart, also after that slot's job was purged.
//
// A Periodic is seen first when a pool that lists it starts and the queue
// has no job, nor purged one, with its prefix Name@: its first slot is the
// first after that instant, never the slot in progress. After every pool
// was down over several slots, only the latest slot missed is enqueued,
// once, when the first pool starts again; so is it after the queue was
// paused (no slot's job is enqueued while it is). Slots are judged on the
// queue's clock (Options.Clock, or on PostgreSQL the server's), and a
// Schedule is asked in UTC: a cron schedule runs on UTC unless it carries
// a zone of its own (CRON_TZ=...). A slot's job has Job's Kind.
type Periodic struct {
	Name     string // the IDs' prefix: a valid name, at most MaxIDLen-25 bytes
	Schedule Schedule
	// Job is a template: its ID, RunAt and Deadline must be zero (a slot
	// sets its ID and RunAt); the rest is as Enqueue takes it.
	Job Job
}

// slotLayouts are the formats of a slot in its job's ID.
const (
	slotLayout   = "2006-01-02T15:04:05Z"
	slotLayoutMS = "2006-01-02T15:04:05.000Z"
)

// maxPeriodicName is the longest Name whose IDs fit in MaxIDLen: "@" and
// a slot with milliseconds take 25 bytes.
const maxPeriodicName = MaxIDLen - 1 - len(slotLayoutMS)

// slotID is the ID of the job of slot t of the Periodic named name.
func slotID(name string, t time.Time) string {
	t = t.UTC()
	if t.Nanosecond() != 0 {
		return name + "@" + t.Format(slotLayoutMS)
	}
	return name + "@" + t.Format(slotLayout)
}

// slotAfter is the first slot of s strictly after after, truncated to the
// millisecond, or the zero time: none, none that moves on from after (a
// schedule that does not is taken to have ended), or one past year 9999,
// which no ID can name. s is asked in UTC whatever after's zone: a
// schedule that takes its zone from its argument (robfig/cron's without
// CRON_TZ=) would otherwise follow the zone of the clock's reading, which
// is the host's local zone for the first slot after a pool starts and UTC
// for every later one, and differs between hosts.
func slotAfter(s Schedule, after time.Time) time.Time {
	t := s.Next(after.UTC())
	if t.IsZero() {
		return t
	}
	t = t.Truncate(time.Millisecond).UTC()
	if !t.After(after) || t.Year() > 9999 {
		return time.Time{}
	}
	return t
}

// maxSlotSteps bounds the slots latestSlot steps over to find the last one.
const maxSlotSteps = 100_000

// latestSlot is the last slot of s at or before now. A Schedule only goes
// forward, so it looks back from now over spans that double from 1ms until
// one holds a slot, then steps forward to the last.
func latestSlot(s Schedule, now time.Time) (time.Time, bool) {
	for span := time.Millisecond; span <= 200*365*24*time.Hour; span *= 2 {
		t := slotAfter(s, now.Add(-span))
		if t.IsZero() || t.After(now) {
			continue
		}
		for range maxSlotSteps {
			n := slotAfter(s, t)
			if n.IsZero() || n.After(now) {
				break
			}
			t = n
		}
		return t, true
	}
	return time.Time{}, false
}

// periodicProblem validates the Periodic list of a pool of q at now.
func (q *Queue) periodicProblem(ps []Periodic, now int64) string {
	names := map[string]int{}
	for i, per := range ps {
		what := fmt.Sprintf("Periodic[%d]", i)
		if why := nameProblem(what+".Name", per.Name); why != "" {
			return why
		}
		if k, dup := names[per.Name]; dup {
			return fmt.Sprintf("%s.Name %q is Periodic[%d]'s too", what, per.Name, k)
		}
		names[per.Name] = i
		if why := periodicJobProblem(q, what, per, now); why != "" {
			return why
		}
	}
	return ""
}

// periodicJobProblem validates one Periodic but for its name's uniqueness.
func periodicJobProblem(q *Queue, what string, per Periodic, now int64) string {
	switch {
	case len(per.Name) > maxPeriodicName:
		return fmt.Sprintf("%s.Name is %d bytes; its IDs need it at most %d", what, len(per.Name), maxPeriodicName)
	case per.Schedule == nil:
		return what + ".Schedule is nil"
	case per.Job.ID != "" || !per.Job.RunAt.IsZero():
		return what + ".Job sets ID or RunAt, which each slot sets"
	case !per.Job.Deadline.IsZero():
		return what + ".Job sets a Deadline, which would pass for every later slot"
	}
	if e, ok := per.Schedule.(every); ok && e.problem() != "" {
		return what + ".Schedule is " + e.problem()
	}
	j := per.Job
	j.ID = slotID(per.Name, fromMillis(now))
	if why := q.jobProblem(j, now); why != "" {
		return what + ".Job: " + why
	}
	return ""
}
