package leaseq_test

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/leaseq/leaseq"
)

// model is the queue as the rules of docs/rules.md describe it: for each named queue a
// map of rows, and the rules, with no SQL, no transactions and no indexes.
// FuzzQueueModel runs the same operations on it and on the real queues and
// compares every answer and every row. It is written from the rules (1–12
// and the lifecycle rules 13–22 in docs/rules.md) and the error
// tables, not from the implementation, so that a shared misreading is
// unlikely. Where the rules leave a choice open — which of the claimable
// jobs of the highest priority a Claim takes, the wording of a quarantine
// reason — the model accepts any allowed answer.
//
// Where the rules are silent about a field, the model takes the State
// documentation's word for it: UpdatedAt is the instant of the last change
// to the row; a Release ends the lease at the instant it is made
// (LeaseUntil) and sets RunAt to now + delay; a Requeue makes the job
// claimable at once (RunAt and LeaseUntil zero, reason cleared). Every other
// field a call does not mention stays as it was.
type model struct {
	maxPayload int // Options.MaxPayload, already defaulted
	queues     []*modelQueue
	nextSeq    int
}

// modelQueue is one named queue: rule 14 makes each independent of the
// others on the database.
type modelQueue struct {
	name        string
	maxAttempts int // Options.MaxAttempts, already defaulted
	jobs        map[string]*modelJob
	// purged is rule 21's memory: the last token of every purged ID, where
	// the tokens of a job enqueued again with that ID continue.
	purged map[string]int64
}

// modelJob is a row as Get shows it, plus what the rules need to know about
// it that State does not show.
type modelJob struct {
	leaseq.State
	seq int // enqueue order, which List pages in
	// since is when the job last became pending: its enqueue, Release or
	// Requeue. Stats.OldestReady counts a pending job claimable since
	// max(since, RunAt). Whether it is claimable does not depend on since:
	// rule 1 makes every pending job claimable but for rule 15's run_at >
	// now, so a job enqueued (or requeued) without a delay is claimable even
	// after the clock has stepped back past the instant it was enqueued.
	since  int64
	reason reasonRule
}

// reasonRule is how much of State.Reason the rules fix.
type reasonRule int

const (
	// reasonExact: Reason is exactly the model's (rule 22's cleaning of the
	// text of the last Release, Fail or Cancel, or "").
	reasonExact reasonRule = iota
	// reasonOwn: a quarantine by the claim sweep (rule 6); the wording is
	// the implementation's, but there is one.
	reasonOwn
	// reasonSaysSo: a Release quarantined the job (rule 18): the reason
	// says so in the implementation's words and holds the Release's own
	// text; the model's Reason is that cleaned text.
	reasonSaysSo
)

func newModel(maxPayload int, opts ...leaseq.Options) *model {
	m := &model{maxPayload: cmp.Or(maxPayload, 1<<20)}
	for _, o := range opts {
		m.queues = append(m.queues, &modelQueue{name: cmp.Or(o.Name, leaseq.DefaultName),
			maxAttempts: cmp.Or(o.MaxAttempts, 3), jobs: map[string]*modelJob{}, purged: map[string]int64{}})
	}
	return m
}

// msOf is rule 8: every instant is truncated to the millisecond.
func msOf(t time.Time) int64 { return t.UnixMilli() }

// atMS is a stored millisecond instant as the queue reports it.
func atMS(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// optMS is a stored optional instant: zero stays zero.
func optMS(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return atMS(msOf(t))
}

// validName is the rule for job IDs, owners and queue names: non-empty, at
// most 255 bytes, UTF-8, no NUL (anything else could not be stored byte for
// byte).
func validName(s string) bool {
	return s != "" && len(s) <= leaseq.MaxIDLen && utf8.ValidString(s) && !bytes.ContainsRune([]byte(s), 0)
}

// cleanReasonModel is rule 22: NUL bytes dropped, invalid UTF-8 replaced by
// U+FFFD, then cut at a character boundary to at most 1 KiB. (The fuzz
// reasons hold no run of invalid bytes and no NUL beside one, so "one U+FFFD
// per invalid byte" and "one per run" agree on them.)
func cleanReasonModel(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = utf8.AppendRune(b, utf8.RuneError)
		case r != 0:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	for len(b) > leaseq.MaxReasonLen {
		_, size := utf8.DecodeLastRune(b)
		b = b[:len(b)-size]
	}
	return string(b)
}

// reasonHolds reports whether a quarantine reason that must hold the cleaned
// text given is a clean reason that does: in full, or — when the whole
// would be over 1 KiB — cut inside it.
func reasonHolds(got, given string) bool {
	switch {
	case got == "", len(got) > leaseq.MaxReasonLen, !utf8.ValidString(got), strings.ContainsRune(got, 0):
		return false
	case strings.Contains(got, given):
		return true
	case len(got) <= leaseq.MaxReasonLen-utf8.UTFMax:
		return false
	}
	for i := range len(got) {
		if strings.HasPrefix(given, got[i:]) {
			return true
		}
	}
	return false
}

// jobProblem is the Errors tables for one job: ErrInvalid, or nil.
func (m *model) jobProblem(n int64, j leaseq.Job) error {
	switch {
	case !validName(j.ID), j.Qty < 0, j.MaxAttempts < 0, len(j.Payload) > m.maxPayload,
		j.Priority < leaseq.MinPriority, j.Priority > leaseq.MaxPriority,
		!j.Deadline.IsZero() && msOf(j.Deadline) <= n,
		!j.Deadline.IsZero() && !j.RunAt.IsZero() && msOf(j.RunAt) >= msOf(j.Deadline):
		return leaseq.ErrInvalid
	}
	return nil
}

// enqueue is the Errors tables for Enqueue, then a pending row whose tokens
// continue those of a purged job of the same ID (rule 21).
func (m *model) enqueue(qi int, now time.Time, j leaseq.Job) error {
	q, n := m.queues[qi], msOf(now)
	if err := m.jobProblem(n, j); err != nil {
		return err
	}
	if q.jobs[j.ID] != nil {
		return leaseq.ErrDuplicate
	}
	s := &modelJob{State: leaseq.State{ID: j.ID, Queue: q.name, Qty: j.Qty, Payload: bytes.Clone(j.Payload),
		Status: leaseq.StatusPending, Token: q.purged[j.ID], MaxAttempts: cmp.Or(j.MaxAttempts, q.maxAttempts),
		Deadline: optMS(j.Deadline), RunAt: optMS(j.RunAt), Priority: j.Priority,
		EnqueuedAt: atMS(n), UpdatedAt: atMS(n)}, seq: m.nextSeq, since: n}
	q.jobs[j.ID] = s
	m.nextSeq++
	return nil
}

// enqueueBatch is enqueue for each job, all or nothing. It returns, for each
// sentinel error, the indexes of the jobs refused with it — an ID already
// taken earlier in the batch is a duplicate like a stored one. The rules do
// not say which of several problems the error reports, so it may report any
// of them. With any problem the model is left as it was.
func (m *model) enqueueBatch(qi int, now time.Time, jobs []leaseq.Job) map[error][]int {
	q := m.queues[qi]
	jobs0, seq0 := maps.Clone(q.jobs), m.nextSeq
	problems := map[error][]int{}
	for i, j := range jobs {
		if err := m.enqueue(qi, now, j); err != nil {
			problems[err] = append(problems[err], i)
		}
	}
	if len(problems) > 0 {
		q.jobs, m.nextSeq = jobs0, seq0
	}
	return problems
}

// readySince is Stats.OldestReady's "since when it has been claimable":
// max(since, run_at) for a pending job, lease_until for an ended lease.
func (s *modelJob) readySince() int64 {
	switch {
	case s.Status == leaseq.StatusLeased:
		return msOf(s.LeaseUntil)
	case s.RunAt.IsZero():
		return s.since
	}
	return max(s.since, msOf(s.RunAt))
}

// claimable is rule 1's choice with rule 15's delay: pending with no run_at
// after now, or leased with lease_until <= now.
func (s *modelJob) claimable(n int64) bool {
	return s.Status == leaseq.StatusPending && (s.RunAt.IsZero() || msOf(s.RunAt) <= n) ||
		s.Status == leaseq.StatusLeased && msOf(s.LeaseUntil) <= n
}

// beginClaim validates a Claim, runs rule 6's quarantine and returns the IDs
// that are claimable now, in enqueue order. Invalid input changes nothing.
func (m *model) beginClaim(qi int, now time.Time, owner string, lease time.Duration) ([]string, error) {
	if !validName(owner) || lease < time.Millisecond {
		return nil, leaseq.ErrInvalid
	}
	q, n := m.queues[qi], msOf(now)
	var ids []string
	for id, s := range q.jobs {
		if !s.claimable(n) {
			continue
		}
		if s.Attempts >= s.MaxAttempts || !s.Deadline.IsZero() && msOf(s.Deadline) <= n {
			s.quarantine(n, "", reasonOwn)
			continue
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(q.jobs[a].seq, q.jobs[b].seq) })
	return ids, nil
}

// highest is rule 16: of the claimable IDs, those a single Claim may take —
// every one of the highest priority. Among them the order is not promised.
func (m *model) highest(qi int, ids []string) []string {
	q := m.queues[qi]
	var top []string
	for _, id := range ids {
		switch {
		case len(top) == 0 || q.jobs[id].Priority == q.jobs[top[0]].Priority:
			top = append(top, id)
		case q.jobs[id].Priority > q.jobs[top[0]].Priority:
			top = []string{id}
		}
	}
	return top
}

func (s *modelJob) quarantine(n int64, reason string, rule reasonRule) {
	s.Status, s.Reason, s.reason, s.UpdatedAt = leaseq.StatusQuarantined, reason, rule, atMS(n)
}

// grant is the rest of rule 1 for the job the queue chose: new owner, token
// and attempt, and rule 5's lease_until = min(now+lease, deadline).
func (m *model) grant(qi int, id string, now time.Time, owner string, lease time.Duration) leaseq.Claim {
	s, n := m.queues[qi].jobs[id], msOf(now)
	s.Status, s.Owner, s.Token, s.Attempts = leaseq.StatusLeased, owner, s.Token+1, s.Attempts+1
	s.LeaseUntil, s.UpdatedAt = atMS(s.leaseEnd(n, lease)), atMS(n)
	return leaseq.Claim{ID: id, Queue: m.queues[qi].name, Qty: s.Qty, Payload: s.Payload, Owner: owner, Token: s.Token,
		Attempt: s.Attempts, LeaseUntil: s.LeaseUntil, Deadline: s.Deadline, Priority: s.Priority}
}

// leaseEnd is rules 5 and 17: min(now + lease, deadline).
func (s *modelJob) leaseEnd(n int64, lease time.Duration) int64 {
	until := n + lease.Milliseconds()
	if !s.Deadline.IsZero() {
		until = min(until, msOf(s.Deadline))
	}
	return until
}

// malformedClaim is the Errors tables' "zero Claim": no Claim call returns
// one.
func malformedClaim(c leaseq.Claim) bool { return c.ID == "" || c.Owner == "" || c.Token <= 0 }

// fence is rule 3's fence, which rules 17–19 share: the job c names in queue
// qi if c is its current lease and both the lease and the deadline still
// run at n, else nil.
func (m *model) fence(qi int, n int64, c leaseq.Claim) *modelJob {
	s := m.queues[qi].jobs[c.ID]
	if c.Queue != "" && c.Queue != m.queues[qi].name {
		return nil // a claim of another queue (Claim.Queue)
	}
	if s == nil || s.Status != leaseq.StatusLeased || s.Owner != c.Owner || s.Token != c.Token ||
		n >= msOf(s.LeaseUntil) || !s.Deadline.IsZero() && n >= msOf(s.Deadline) {
		return nil
	}
	return s
}

// finish is rule 3 and the Errors table for Finish.
func (m *model) finish(qi int, now time.Time, c leaseq.Claim) (bool, error) {
	if malformedClaim(c) {
		return false, leaseq.ErrInvalid
	}
	n := msOf(now)
	s := m.fence(qi, n, c)
	if s == nil {
		return false, nil
	}
	s.Status, s.UpdatedAt = leaseq.StatusDone, atMS(n)
	return true, nil
}

// finishBatch is finish for each claim in order, all judged at one instant.
// A malformed claim anywhere refuses the whole batch, changing nothing; its
// indexes are returned so the error can be checked for naming one.
func (m *model) finishBatch(qi int, now time.Time, cs []leaseq.Claim) ([]bool, []int, error) {
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
		oks[i], _ = m.finish(qi, now, c)
	}
	return oks, nil, nil
}

// extend is rule 17: the fence, then lease_until = min(now + lease,
// deadline) counted from now; token and attempts stay. It returns the new
// lease end.
func (m *model) extend(qi int, now time.Time, c leaseq.Claim, lease time.Duration) (time.Time, bool, error) {
	if malformedClaim(c) || lease < time.Millisecond {
		return time.Time{}, false, leaseq.ErrInvalid
	}
	n := msOf(now)
	s := m.fence(qi, n, c)
	if s == nil {
		return time.Time{}, false, nil
	}
	s.LeaseUntil, s.UpdatedAt = atMS(s.leaseEnd(n, lease)), atMS(n)
	return s.LeaseUntil, true, nil
}

// extendBatch is extend for each claim in order, all judged at one instant
// with one lease. A lease under 1 ms, or a malformed claim anywhere, refuses
// the whole batch, changing nothing; the malformed claims' indexes are
// returned so the error can be checked for naming one. Otherwise each claim
// comes back with its new lease end, or unchanged when its fence refused
// it. A claim named twice is renewed twice, to the same end: the first
// renewal leaves its lease running (lease_until > now), so its fence holds.
func (m *model) extendBatch(qi int, now time.Time, cs []leaseq.Claim, lease time.Duration) ([]leaseq.Claim, []bool, []int, error) {
	if lease < time.Millisecond {
		return nil, nil, nil, leaseq.ErrInvalid
	}
	var bad []int
	for i, c := range cs {
		if malformedClaim(c) {
			bad = append(bad, i)
		}
	}
	if len(bad) > 0 {
		return nil, nil, bad, leaseq.ErrInvalid
	}
	out, oks := slices.Clone(cs), make([]bool, len(cs))
	for i, c := range cs {
		var until time.Time
		if until, oks[i], _ = m.extend(qi, now, c, lease); oks[i] {
			out[i].LeaseUntil = until
		}
	}
	return out, oks, nil, nil
}

// release is rule 18: the fence, then pending again, claimable from now +
// delay, token and attempts kept, the reason stored — or quarantined at
// once when the attempts are used up or now + delay is at or after the
// deadline.
func (m *model) release(qi int, now time.Time, c leaseq.Claim, delay time.Duration, reason string) (bool, error) {
	if malformedClaim(c) || delay < 0 {
		return false, leaseq.ErrInvalid
	}
	n := msOf(now)
	s := m.fence(qi, n, c)
	if s == nil {
		return false, nil
	}
	runAt := n + delay.Milliseconds()
	s.RunAt, s.LeaseUntil = atMS(runAt), atMS(n)
	if s.Attempts >= s.MaxAttempts || !s.Deadline.IsZero() && runAt >= msOf(s.Deadline) {
		s.quarantine(n, cleanReasonModel(reason), reasonSaysSo)
		return true, nil
	}
	s.Status, s.Reason, s.reason, s.UpdatedAt, s.since = leaseq.StatusPending, cleanReasonModel(reason), reasonExact, atMS(n), n
	return true, nil
}

// snooze is rule 49: release with the attempt given back — pending again
// with max attempts one higher, or quarantined at once, max attempts as
// they were, when now + delay is at or after the deadline.
func (m *model) snooze(qi int, now time.Time, c leaseq.Claim, delay time.Duration, reason string) (bool, error) {
	if malformedClaim(c) || delay < 0 {
		return false, leaseq.ErrInvalid
	}
	n := msOf(now)
	s := m.fence(qi, n, c)
	if s == nil {
		return false, nil
	}
	runAt := n + delay.Milliseconds()
	s.RunAt, s.LeaseUntil = atMS(runAt), atMS(n)
	if !s.Deadline.IsZero() && runAt >= msOf(s.Deadline) {
		s.quarantine(n, cleanReasonModel(reason), reasonSaysSo)
		return true, nil
	}
	s.MaxAttempts++
	s.Status, s.Reason, s.reason, s.UpdatedAt, s.since = leaseq.StatusPending, cleanReasonModel(reason), reasonExact, atMS(n), n
	return true, nil
}

// fail is rule 19: the fence, then quarantined with the reason given.
func (m *model) fail(qi int, now time.Time, c leaseq.Claim, reason string) (bool, error) {
	if malformedClaim(c) {
		return false, leaseq.ErrInvalid
	}
	n := msOf(now)
	s := m.fence(qi, n, c)
	if s == nil {
		return false, nil
	}
	s.quarantine(n, cleanReasonModel(reason), reasonExact)
	return true, nil
}

// cancel is rule 20: a pending or leased job (an ended lease too) is
// quarantined with the reason given; done or quarantined is ErrInvalid,
// unknown ErrNotFound.
func (m *model) cancel(qi int, now time.Time, id, reason string) error {
	s := m.queues[qi].jobs[id]
	switch {
	case s == nil:
		return leaseq.ErrNotFound
	case s.Status != leaseq.StatusPending && s.Status != leaseq.StatusLeased:
		return leaseq.ErrInvalid
	}
	s.quarantine(msOf(now), cleanReasonModel(reason), reasonExact)
	return nil
}

// requeue is the explicit way out of quarantine that rule 6 allows: pending
// again, claimable at once, attempts reset, lease and reason cleared. Owner
// and token stay, so the next claim's token is still one no claim had
// before. A job that is not quarantined, or whose deadline is at or before
// now (it could never be finished), is refused and unchanged.
func (m *model) requeue(qi int, now time.Time, id string) error {
	s, n := m.queues[qi].jobs[id], msOf(now)
	switch {
	case s == nil:
		return leaseq.ErrNotFound
	case s.Status != leaseq.StatusQuarantined, !s.Deadline.IsZero() && msOf(s.Deadline) <= n:
		return leaseq.ErrInvalid
	}
	s.Status, s.Attempts, s.LeaseUntil, s.RunAt, s.Reason, s.reason = leaseq.StatusPending, 0, time.Time{}, time.Time{}, "", reasonExact
	s.UpdatedAt, s.since = atMS(n), n
	return nil
}

// purge is rule 21: the jobs of the given statuses (done when none given)
// whose last change is strictly before before are deleted, each remembering
// its last token; another status is ErrInvalid and deletes nothing.
func (m *model) purge(qi int, before time.Time, statuses []leaseq.Status) (int, error) {
	if len(statuses) == 0 {
		statuses = []leaseq.Status{leaseq.StatusDone}
	}
	for _, st := range statuses {
		if st != leaseq.StatusDone && st != leaseq.StatusQuarantined {
			return 0, leaseq.ErrInvalid
		}
	}
	q, b, n := m.queues[qi], msOf(before), 0
	for id, s := range q.jobs {
		if slices.Contains(statuses, s.Status) && msOf(s.UpdatedAt) < b {
			q.purged[id] = s.Token
			delete(q.jobs, id)
			n++
		}
	}
	return n, nil
}

// stats is Stats at now: every job counted once by where it is, and the
// earliest instant since which a claimable job has been claimable (after
// the clock stepped back that may be after now).
func (m *model) stats(qi int, now time.Time) leaseq.Stats {
	var st leaseq.Stats
	n := msOf(now)
	for _, s := range m.queues[qi].jobs {
		if s.claimable(n) && (st.OldestReady.IsZero() || s.readySince() < msOf(st.OldestReady)) {
			st.OldestReady = atMS(s.readySince())
		}
		switch {
		case s.Status == leaseq.StatusPending && s.claimable(n):
			st.Pending++
		case s.Status == leaseq.StatusPending:
			st.Scheduled++
		case s.Status == leaseq.StatusLeased && s.claimable(n):
			st.Expired++
		case s.Status == leaseq.StatusLeased:
			st.Leased++
		case s.Status == leaseq.StatusDone:
			st.Done++
		case s.Status == leaseq.StatusQuarantined:
			st.Quarantined++
		}
	}
	return st
}

// list is List: the errors it may answer (an invalid filter is ErrInvalid,
// an AfterID not in the queue ErrNotFound; with both, either), or the page.
func (m *model) list(qi int, f leaseq.Filter) ([]*modelJob, []error) {
	var errs []error
	switch f.Status {
	case "", leaseq.StatusPending, leaseq.StatusLeased, leaseq.StatusDone, leaseq.StatusQuarantined:
	default:
		errs = append(errs, leaseq.ErrInvalid)
	}
	if f.Limit < 0 || f.Limit > leaseq.MaxListLimit {
		errs = append(errs, leaseq.ErrInvalid)
	}
	q, after := m.queues[qi], -1
	if f.AfterID != "" {
		if s := q.jobs[f.AfterID]; s != nil {
			after = s.seq
		} else {
			errs = append(errs, leaseq.ErrNotFound)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	page := q.inOrder()
	page = slices.DeleteFunc(page, func(s *modelJob) bool {
		return s.seq <= after || f.Status != "" && s.Status != f.Status
	})
	return page[:min(len(page), cmp.Or(f.Limit, leaseq.DefaultListLimit))], nil
}

// inOrder is the queue's jobs in enqueue order.
func (q *modelQueue) inOrder() []*modelJob {
	return slices.SortedFunc(maps.Values(q.jobs), func(a, b *modelJob) int { return cmp.Compare(a.seq, b.seq) })
}

// get is Get: the row, or ErrNotFound.
func (m *model) get(qi int, id string) (*modelJob, error) {
	if s := m.queues[qi].jobs[id]; s != nil {
		return s, nil
	}
	return nil, leaseq.ErrNotFound
}

// sameState compares a real row with the model's, every field. The wording
// of a quarantine's own reason is the implementation's: the model checks
// only what the rules promise of it.
func sameState(got leaseq.State, want *modelJob) (string, string, bool) {
	w := want.State
	switch want.reason {
	case reasonOwn:
		if got.Reason != "" && cleanReasonModel(got.Reason) == got.Reason {
			w.Reason = got.Reason
		} else {
			w.Reason = "(a clean quarantine reason)"
		}
	case reasonSaysSo:
		if reasonHolds(got.Reason, want.Reason) {
			w.Reason = got.Reason
		} else {
			w.Reason = fmt.Sprintf("(a clean reason holding %q)", want.Reason)
		}
	}
	g, ws := fmtFullState(got), fmtFullState(w)
	return g, ws, g == ws
}

// fmtFullState prints every field of a row, times as milliseconds after t0.
func fmtFullState(s leaseq.State) string {
	return fmt.Sprintf("{queue=%q id=%q status=%s owner=%q token=%d attempts=%d/%d lease_until=%s deadline=%s run_at=%s "+
		"priority=%d qty=%d payload=%q reason=%q enqueued=%s updated=%s}",
		s.Queue, s.ID, s.Status, s.Owner, s.Token, s.Attempts, s.MaxAttempts, relMS(s.LeaseUntil), relMS(s.Deadline),
		relMS(s.RunAt), s.Priority, s.Qty, s.Payload, s.Reason, relMS(s.EnqueuedAt), relMS(s.UpdatedAt))
}

// sameClaim compares a Claim with the model's, field by field.
func sameClaim(got, want leaseq.Claim) (string, string, bool) {
	f := func(c leaseq.Claim) string {
		return fmt.Sprintf("{queue=%q id=%q owner=%q token=%d attempt=%d lease_until=%s deadline=%s priority=%d qty=%d payload=%q}",
			c.Queue, c.ID, c.Owner, c.Token, c.Attempt, relMS(c.LeaseUntil), relMS(c.Deadline), c.Priority, c.Qty, c.Payload)
	}
	g, w := f(got), f(want)
	return g, w, g == w
}
