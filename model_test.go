package leaseq_test

import (
	"bytes"
	"fmt"
	"maps"
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
	seq         map[string]int // enqueue order, which ClaimBatch returns its claims in
	nextSeq     int
}

func newModel(opts leaseq.Options) *model {
	m := &model{maxAttempts: opts.MaxAttempts, maxPayload: opts.MaxPayload,
		jobs: map[string]*leaseq.State{}, seq: map[string]int{}}
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
	m.seq[j.ID] = m.nextSeq
	m.nextSeq++
	return nil
}

// enqueueBatch is enqueue for each job, all or nothing. It returns, for each
// sentinel error, the indexes of the jobs refused with it — an ID already
// taken earlier in the batch is a duplicate like a stored one. SPEC does not
// say which of several problems the error reports, so it may report any of
// them. With any problem the model is left as it was.
func (m *model) enqueueBatch(now time.Time, jobs []leaseq.Job) map[error][]int {
	jobs0, seq0 := maps.Clone(m.jobs), maps.Clone(m.seq)
	problems := map[error][]int{}
	for i, j := range jobs {
		if err := m.enqueue(now, j); err != nil {
			problems[err] = append(problems[err], i)
		}
	}
	if len(problems) > 0 {
		m.jobs, m.seq = jobs0, seq0
	}
	return problems
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

// malformedClaim is the Errors table's "zero Claim": no Claim call returns
// one.
func malformedClaim(c leaseq.Claim) bool { return c.ID == "" || c.Owner == "" || c.Token <= 0 }

// finish is rule 3's fence and the Errors table for Finish.
func (m *model) finish(now time.Time, c leaseq.Claim) (bool, error) {
	if malformedClaim(c) {
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

// finishBatch is finish for each claim in order, all judged at one instant.
// A malformed claim anywhere refuses the whole batch, changing nothing; its
// indexes are returned so the error can be checked for naming one.
func (m *model) finishBatch(now time.Time, cs []leaseq.Claim) ([]bool, []int, error) {
	var bad []int
	for i, c := range cs {
		if malformedClaim(c) {
			bad = append(bad, i)
		}
	}
	if len(bad) > 0 {
		return nil, bad, leaseq.ErrInvalid
	}
	oks := make([]bool, len(cs))
	for i, c := range cs {
		oks[i], _ = m.finish(now, c)
	}
	return oks, nil, nil
}

// requeue is the explicit way out of quarantine that rule 6 allows: pending
// again, attempts reset, lease and reason cleared. Owner and token stay, so
// the next claim's token is still one no claim had before. A job that is not
// quarantined, or whose deadline is at or before now (it could never be
// finished), is refused and unchanged.
func (m *model) requeue(now time.Time, id string) error {
	s := m.jobs[id]
	switch {
	case s == nil:
		return leaseq.ErrNotFound
	case s.Status != leaseq.StatusQuarantined, !s.Deadline.IsZero() && msOf(s.Deadline) <= msOf(now):
		return leaseq.ErrInvalid
	}
	s.Status, s.Attempts, s.LeaseUntil, s.Reason = leaseq.StatusPending, 0, time.Time{}, ""
	return nil
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
