package leaseq

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// A pool's periodic jobs (rule 53): a goroutine of the pool offers each
// slot's job once the queue's clock reaches the slot. It writes only then,
// and reads once per Periodic when the pool starts.

// timedPassHook, when set (by the tests), is called after each pass of a
// pool's periodic or retention loop with the loop's name ("periodic",
// "retention"), the pool's owner and the instant the pass judged at.
var timedPassHook atomic.Pointer[func(loop, owner string, now time.Time)]

// passed calls timedPassHook, if set.
func (p *pool) passed(loop string, now time.Time) {
	if h := timedPassHook.Load(); h != nil {
		(*h)(loop, p.opts.Owner, now)
	}
}

// startTimed starts the pool's periodic jobs and its retention, each in a
// goroutine of its own until ctx ends; stop ends them and waits.
func (p *pool) startTimed(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var loops []chan struct{}
	for _, loop := range []func(context.Context){p.periodicLoop, p.retentionLoop} {
		done := make(chan struct{})
		loops = append(loops, done)
		go func() {
			defer close(done)
			loop(ctx)
		}()
	}
	return func() {
		cancel()
		for _, done := range loops {
			<-done
		}
	}
}

// slotter is one Periodic of a pool.
type slotter struct {
	per   Periodic
	known bool      // the start's read and offer are done
	next  time.Time // the next slot to offer; zero: none
	// held: next was refused as the queue is paused; each pass offers the
	// latest slot from next on again, so that a Resume gets only the
	// latest slot missed while paused, as after an outage.
	held bool
	told bool // the Error that the schedule yields no slot was logged
}

// guarded is a Schedule whose panics in Next are recovered: the schedule
// then yields no slot, and the panic is kept for the log.
type guarded struct {
	s        Schedule
	answered *string // what the last Next said, for the log
}

func (g guarded) Next(after time.Time) (t time.Time) {
	defer func() {
		if v := recover(); v != nil {
			*g.answered, t = fmt.Sprintf("panic: %v", v), time.Time{}
		}
	}()
	t = g.s.Next(after)
	*g.answered = fmt.Sprintf("%v for after %v", t, after)
	return t
}

// tellNoSlot logs once, as an Error, that s's schedule yields no usable
// slot (none, one not after the argument, or a panic): its Periodic never
// fires again, which would otherwise pass unseen.
func (p *pool) tellNoSlot(s *slotter, answered string) {
	if !s.known || answered == "" || !s.next.IsZero() || s.told {
		return
	}
	s.told = true
	p.log.Error("leaseq: periodic schedule yields no usable slot; it will not fire", "periodic", s.per.Name,
		"queue", p.q.name, "owner", p.opts.Owner, "schedule_answered", answered)
}

// periodicLoop offers the pool's slots until ctx ends.
func (p *pool) periodicLoop(ctx context.Context) {
	if len(p.opts.Periodic) == 0 {
		return
	}
	slots := make([]*slotter, len(p.opts.Periodic))
	for i, per := range p.opts.Periodic {
		slots[i] = &slotter{per: per}
	}
	p.timedLoop(ctx, "periodic", func(now time.Time) (time.Duration, error) {
		return p.periodicPass(ctx, slots, now)
	})
}

// timedLoop runs pass at the queue's clock until ctx ends or the queue
// closes, sleeping for what pass asks, at most PollInterval (the queue's
// clock may be set or jump), and backing off after faults.
func (p *pool) timedLoop(ctx context.Context, loop string, pass func(now time.Time) (time.Duration, error)) {
	faults := 0
	for {
		now := p.q.clock.Now().Truncate(time.Millisecond)
		wait, err := pass(now)
		wait = min(max(wait, time.Millisecond), p.opts.PollInterval)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			faults++
			wait = faultDelay(faults, p.opts.PollInterval)
			p.log.Error("leaseq: "+loop+" pass failed; retrying", "queue", p.q.name, "owner", p.opts.Owner,
				"error", err, "retry_in", wait)
		default:
			faults = 0
		}
		p.passed(loop, now)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-p.q.closing:
		case <-timer.C:
		}
		timer.Stop()
		if ctx.Err() != nil || p.q.usable() != nil {
			return
		}
	}
}

// periodicPass offers every slot due at now and says how long until the
// next one.
func (p *pool) periodicPass(ctx context.Context, slots []*slotter, now time.Time) (time.Duration, error) {
	wait := p.opts.PollInterval
	for _, s := range slots {
		if err := p.slotPass(ctx, s, now); err != nil {
			return 0, err
		}
		if !s.next.IsZero() && !s.held {
			wait = min(wait, s.next.Sub(now))
		}
	}
	return wait, nil
}

// slotPass offers s's slot due at now, if one is. At the pool's start it
// reads whether the Periodic was seen before: if so the latest slot at or
// before now is offered (the one in progress, or the latest missed while
// every pool was down); if not the first slot is the next one.
func (p *pool) slotPass(ctx context.Context, s *slotter, now time.Time) error {
	var answered string
	sched := guarded{s: s.per.Schedule, answered: &answered}
	defer func() { p.tellNoSlot(s, answered) }()
	if !s.known {
		seen, err := p.q.e.SlotSeen(ctx, engine.SlotSeenParams{Queue: p.q.name, Prefix: s.per.Name + "@"})
		if err != nil {
			return opError("periodic", job(s.per.Name), err)
		}
		s.known, s.next = true, slotAfter(sched, now)
		if last, ok := latestSlot(sched, now); seen && ok {
			return p.offerSlot(ctx, s, last)
		}
		return nil // tellNoSlot runs with what Next answered
	}
	if s.next.IsZero() || s.next.After(now) {
		return nil
	}
	last := s.next
	for range maxSlotSteps { // the slots missed while this pool was held up: only the latest
		n := slotAfter(sched, last)
		if n.IsZero() || n.After(now) {
			break
		}
		last = n
	}
	s.next = slotAfter(sched, last)
	return p.offerSlot(ctx, s, last)
}

// offerSlot enqueues the job of slot t of s unless the queue has it or
// purged it. A paused queue refuses it: s then holds t as its next slot,
// to be offered again, or a later one, once the queue is resumed.
func (p *pool) offerSlot(ctx context.Context, s *slotter, t time.Time) error {
	j := s.per.Job
	j.ID, j.RunAt = slotID(s.per.Name, t), t
	row := p.q.newRow(j, p.q.now())
	answer, err := p.q.e.SlotInsert(ctx, engine.SlotInsertParams{Queue: p.q.ref(), Job: row})
	if err != nil {
		s.next = t // offered again at the next pass
		return opError("periodic", job(j.ID), err)
	}
	s.held = answer == engine.SlotPaused
	if s.held {
		s.next = t
	}
	if answer == engine.SlotWritten {
		p.q.e.Wakers().Signal(p.q.name)
		p.log.Debug("leaseq: periodic job enqueued", "job", j.ID, "queue", p.q.name, "owner", p.opts.Owner)
	}
	return nil
}
