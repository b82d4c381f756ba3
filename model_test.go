package leaseq_test

import (
	"bytes"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/leaseq/leaseq"
)

// model is the queue as SPEC describes it: a map of rows and the rules, with
// no SQL, no transactions and no indexes. FuzzQueueModel runs the same
// operations on it and on the real queue and compares every answer. It is
// written from SPEC's rules and error table, not from the implementation, so
// that a shared misreading is unlikely; where SPEC leaves a choice open (which
// claimable job a Claim takes) the model accepts any allowed answer.
type model struct {
	maxAttempts int // Options.MaxAttempts, already defaulted
	maxPayload  int // Options.MaxPayload, already defaulted
	jobs        map[string]*leaseq.State
}

func newModel(opts leaseq.Options) *model {
	m := &model{maxAttempts: opts.MaxAttempts, maxPayload: opts.MaxPayload, jobs: map[string]*leaseq.State{}}
	if m.maxAttempts == 0 {
		m.maxAttempts = 3
	}
	if m.maxPayload == 0 {
		m.maxPayload = 1 << 20
	}
	return m
}

// msOf is SPEC rule 8: every instant is truncated to the millisecond.
func msOf(t time.Time) int64 { return t.UnixMilli() }

// atMS is a stored millisecond instant as the queue reports it.
func atMS(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// validName is the rule for job IDs and owners: non-empty, at most 255
// bytes, UTF-8, no NUL (anything else could not be stored byte for byte).
func validName(s string) bool {
	return s != "" && len(s) <= leaseq.MaxIDLen && utf8.ValidString(s) && !bytes.ContainsRune([]byte(s), 0)
}

// enqueue is SPEC's Errors table for Enqueue, then a pending row.
func (m *model) enqueue(now time.Time, j leaseq.Job) error {
	switch {
	case !validName(j.ID), j.Qty < 0, j.MaxAttempts < 0, len(j.Payload) > m.maxPayload,
		!j.Deadline.IsZero() && msOf(j.Deadline) <= msOf(now):
		return leaseq.ErrInvalid
	case m.jobs[j.ID] != nil:
		return leaseq.ErrDuplicate
	}
	s := &leaseq.State{ID: j.ID, Qty: j.Qty, Payload: bytes.Clone(j.Payload), Status: leaseq.StatusPending, MaxAttempts: j.MaxAttempts}
	if s.MaxAttempts == 0 {
		s.MaxAttempts = m.maxAttempts
	}
	if !j.Deadline.IsZero() {
		s.Deadline = atMS(msOf(j.Deadline))
	}
	m.jobs[j.ID] = s
	return nil
}

// claimable is SPEC rule 1's choice: pending, or leased with lease_until <=
// now.
func claimable(s *leaseq.State, now int64) bool {
	return s.Status == leaseq.StatusPending || s.Status == leaseq.StatusLeased && msOf(s.LeaseUntil) <= now
}

// beginClaim validates a Claim, runs rule 6's quarantine and returns the IDs
// a Claim may take now. Invalid input changes nothing.
func (m *model) beginClaim(now time.Time, owner string, lease time.Duration) ([]string, error) {
	if !validName(owner) || lease.Milliseconds() <= 0 {
		return nil, leaseq.ErrInvalid
	}
	n := msOf(now)
	var ids []string
	for id, s := range m.jobs {
		if !claimable(s, n) {
			continue
		}
		deadlinePassed := !s.Deadline.IsZero() && msOf(s.Deadline) <= n
		if s.Attempts >= s.MaxAttempts || deadlinePassed {
			s.Status = leaseq.StatusQuarantined
			s.Reason = "set"
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// grant is the rest of rule 1 for the job the queue chose: new owner, token
// and attempt, and rule 5's lease_until = min(now+lease, deadline).
func (m *model) grant(id string, now time.Time, owner string, lease time.Duration) leaseq.Claim {
	s := m.jobs[id]
	until := msOf(now) + lease.Milliseconds()
	if !s.Deadline.IsZero() && msOf(s.Deadline) < until {
		until = msOf(s.Deadline)
	}
	s.Status, s.Owner, s.Token, s.Attempts, s.LeaseUntil = leaseq.StatusLeased, owner, s.Token+1, s.Attempts+1, atMS(until)
	return leaseq.Claim{ID: id, Qty: s.Qty, Payload: s.Payload, Owner: owner, Token: s.Token,
		Attempt: s.Attempts, LeaseUntil: s.LeaseUntil, Deadline: s.Deadline}
}

// finish is rule 3's fence and the Errors table for Finish.
func (m *model) finish(now time.Time, c leaseq.Claim) (bool, error) {
	if c.ID == "" || c.Owner == "" || c.Token <= 0 {
		return false, leaseq.ErrInvalid
	}
	s, n := m.jobs[c.ID], msOf(now)
	if s == nil || s.Status != leaseq.StatusLeased || s.Owner != c.Owner || s.Token != c.Token ||
		n >= msOf(s.LeaseUntil) || !s.Deadline.IsZero() && n >= msOf(s.Deadline) {
		return false, nil
	}
	s.Status = leaseq.StatusDone
	return true, nil
}

// get is Get: a copy of the row, or ErrNotFound.
func (m *model) get(id string) (leaseq.State, error) {
	s := m.jobs[id]
	if s == nil {
		return leaseq.State{}, leaseq.ErrNotFound
	}
	return *s, nil
}

// sameState compares a real row with the model's. The reason's wording is
// the implementation's; the model only knows whether there must be one.
func sameState(got, want leaseq.State) (string, string, bool) {
	if got.Reason != "" {
		got.Reason = "set"
	}
	g, w := fmtState(got), fmtState(want)
	return g, w, g == w && got.ID == want.ID
}

// sameClaim compares a Claim with the model's, field by field.
func sameClaim(got, want leaseq.Claim) (string, string, bool) {
	f := func(c leaseq.Claim) string {
		return fmt.Sprintf("{id=%q owner=%q token=%d attempt=%d lease_until=%s deadline=%s qty=%d payload=%q}",
			c.ID, c.Owner, c.Token, c.Attempt, relMS(c.LeaseUntil), relMS(c.Deadline), c.Qty, c.Payload)
	}
	g, w := f(got), f(want)
	return g, w, g == w
}
