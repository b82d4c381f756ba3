package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// cutCall is a call of TestCancelledWriteAnswersWhatHappened: prep brings
// the jobs of ids to the state the call needs and returns their claims (nil
// for an operator's call), and call runs it on the jobs, answering whether
// it reports its effect done (true, or nil for an operator's call).
type cutCall struct {
	name string
	jobs int
	prep func(f *fixture, ids []string) map[string]leaseq.Claim
	call func(ctx context.Context, q *leaseq.Queue, cs []leaseq.Claim, ids []string) (bool, error)
}

// claimAll claims the pending jobs ids, all of them, for a minute.
func claimAll(f *fixture, ids []string) map[string]leaseq.Claim {
	f.t.Helper()
	cs, err := f.q.ClaimBatch(f.ctx, "w", time.Minute, len(ids))
	if err != nil || len(cs) != len(ids) {
		f.t.Fatalf("ClaimBatch: %d claims, %v; want %d", len(cs), err, len(ids))
	}
	out := map[string]leaseq.Claim{}
	for _, c := range cs {
		out[c.ID] = c
	}
	return out
}

var cutCalls = []cutCall{
	{"finish", 1, claimAll, func(ctx context.Context, q *leaseq.Queue, cs []leaseq.Claim, _ []string) (bool, error) {
		return q.Finish(ctx, cs[0])
	}},
	{"extend", 1, claimAll, func(ctx context.Context, q *leaseq.Queue, cs []leaseq.Claim, _ []string) (bool, error) {
		c, ok, err := q.Extend(ctx, cs[0], 3*time.Minute)
		if ok && c.LeaseUntil.Sub(cs[0].LeaseUntil) != 2*time.Minute && !strings.HasPrefix(cs[0].ID, "s") {
			return false, fmt.Errorf("extended to %v, from %v", c.LeaseUntil, cs[0].LeaseUntil)
		}
		return ok, err
	}},
	{"release", 1, claimAll, func(ctx context.Context, q *leaseq.Queue, cs []leaseq.Claim, _ []string) (bool, error) {
		return q.Release(ctx, cs[0], time.Second, "again")
	}},
	{"fail", 1, claimAll, func(ctx context.Context, q *leaseq.Queue, cs []leaseq.Claim, _ []string) (bool, error) {
		return q.Fail(ctx, cs[0], "broken")
	}},
	{"finish batch", 2, claimAll, func(ctx context.Context, q *leaseq.Queue, cs []leaseq.Claim, _ []string) (bool, error) {
		oks, err := q.FinishBatch(ctx, cs)
		if err == nil && (len(oks) != 2 || !oks[0] || !oks[1]) {
			return false, fmt.Errorf("FinishBatch answered %v", oks)
		}
		return err == nil, err
	}},
	{"cancel", 1, nil, func(ctx context.Context, q *leaseq.Queue, _ []leaseq.Claim, ids []string) (bool, error) {
		err := q.Cancel(ctx, ids[0], "stop")
		return err == nil, err
	}},
	{"requeue", 1, func(f *fixture, ids []string) map[string]leaseq.Claim {
		for _, c := range claimAll(f, ids) {
			if ok, err := f.q.Fail(f.ctx, c, "broken"); !ok || err != nil {
				f.t.Fatalf("Fail: %v %v", ok, err)
			}
		}
		return nil
	}, func(ctx context.Context, q *leaseq.Queue, _ []leaseq.Claim, ids []string) (bool, error) {
		err := q.Requeue(ctx, ids[0])
		return err == nil, err
	}},
}

// TestCancelledWriteAnswersWhatHappened checks the errors table's cancelled
// context for every call that writes a job's row but Enqueue (see
// TestCancelledEnqueueAnswersWhatHappened): each round cancels the call's
// context at a random point (before the call, or up to 3ms into it) and
// compares the answer with the row. A twin of the call's jobs, in the same
// state, gets the same call with no cancellation: the call's row must then
// be either as it was, and the answer its context's error, or as the twin's
// is, and the answer the call's success — never a third row, never the
// other answer. On the injected clock the rows must match to the
// millisecond; on the queue's own clock (the server's on PostgreSQL) all
// but the times. Both answers must be seen.
func TestCancelledWriteAnswersWhatHappened(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		for _, clock := range []string{"manual", "system"} {
			for _, cc := range cutCalls {
				t.Run(clock+"/"+cc.name, func(t *testing.T) {
					f := clockFixture(t, e, clock)
					cutRounds(t, f, clock == "manual", cc)
				})
			}
		}
	})
}

// cutDelay cancels a context at a random point: before the call (one
// time in four), or up to span into it. span is twice as long as the call
// takes uncancelled, and at least 3ms, so that both answers come on a slow
// machine too (under -race, say).
func cutDelay(cancel context.CancelFunc, span time.Duration) {
	span = max(span, 3*time.Millisecond)
	if d := rand.N(span + span/3); d < span/3 {
		cancel()
	} else {
		time.AfterFunc(d-span/3, cancel)
	}
}

// callTime keeps the mean time of the uncancelled calls it was given.
type callTime struct {
	sum time.Duration
	n   int
}

func (c *callTime) add(d time.Duration) { c.sum, c.n = c.sum+d, c.n+1 }
func (c *callTime) span() time.Duration { return 2 * c.sum / time.Duration(max(c.n, 1)) }

// cutRounds runs the rounds of TestCancelledWriteAnswersWhatHappened for
// one call.
func cutRounds(t *testing.T, f *fixture, exact bool, cc cutCall) {
	const rounds = 200
	done, cancelled := 0, 0
	var wrong []string
	var took callTime
	for round := range rounds {
		prefix := "m"
		if !exact {
			prefix = "s"
		}
		var mine, twin []string
		for i := range cc.jobs {
			mine = append(mine, fmt.Sprintf("%s%03d-a%d", prefix, round, i))
			twin = append(twin, fmt.Sprintf("%s%03d-b%d", prefix, round, i))
		}
		for _, id := range append(append([]string{}, mine...), twin...) {
			f.enqueue(leaseq.Job{ID: id, Payload: []byte("p")})
		}
		var cs map[string]leaseq.Claim
		if cc.prep != nil {
			cs = cc.prep(f, append(append([]string{}, mine...), twin...))
		}
		claims := func(ids []string) []leaseq.Claim {
			var out []leaseq.Claim
			for _, id := range ids {
				if c, ok := cs[id]; ok {
					out = append(out, c)
				}
			}
			return out
		}
		before := rowsOf(f, mine)
		ctx, cancel := context.WithCancel(f.ctx)
		cutDelay(cancel, took.span())
		ok, err := cc.call(ctx, f.q, claims(mine), mine)
		cancel()
		began := time.Now()
		if tok, terr := cc.call(f.ctx, f.q, claims(twin), twin); !tok || terr != nil {
			t.Fatalf("round %d: the twin call, not cancelled: %v %v", round, tok, terr)
		}
		took.add(time.Since(began))
		after, twinAfter := rowsOf(f, mine), rowsOf(f, twin)
		for _, id := range append(append([]string{}, mine...), twin...) {
			f.q.Cancel(f.ctx, id, "round over") // nothing of this round is claimed in the next
		}
		same := rowsMatch(after, before, true)
		effect := rowsMatch(after, twinAfter, exact)
		switch {
		case effect && ok && err == nil:
			done++
		case same && !ok && errors.Is(err, context.Canceled):
			cancelled++
		default:
			wrong = append(wrong, fmt.Sprintf("round %d: answered %v, %v with the row(s)\n %s\n before\n %s\n the twin's\n %s",
				round, ok, err, strings.Join(after, "\n "), strings.Join(before, "\n "), strings.Join(twinAfter, "\n ")))
		}
	}
	t.Logf("%s: %d rounds: %d done, %d cancelled with nothing written, %d wrong", t.Name(), rounds, done, cancelled, len(wrong))
	if len(wrong) > 0 {
		t.Errorf("%d of %d rounds answered other than what happened; the first:\n%s", len(wrong), rounds, wrong[0])
	}
	if done == 0 || cancelled == 0 {
		t.Errorf("%d rounds done, %d cancelled: want both", done, cancelled)
	}
}

// rowsOf prints the rows of ids without their IDs, times and all (fmtRow).
func rowsOf(f *fixture, ids []string) []string {
	f.t.Helper()
	var out []string
	for _, id := range ids {
		out = append(out, fmtRow(f.get(id)))
	}
	return out
}

// rowsMatch compares rows printed by rowsOf: exactly, or all but the
// times (each time printed as +Nms) when exact is false.
func rowsMatch(a, b []string, exact bool) bool {
	norm := func(s string) string {
		if exact {
			return s
		}
		return timeInRow.ReplaceAllString(s, "T")
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if norm(a[i]) != norm(b[i]) {
			return false
		}
	}
	return true
}

// timeInRow is a time as relMS prints it.
var timeInRow = regexp.MustCompile(`[+-][0-9]+ms`)

// TestCancelledPurgeAnswersWhatHappened: a Purge whose context is
// cancelled at a random point answers with the number of jobs it deleted,
// exactly those gone from the table, and with no error only when it
// deleted all it was asked to; an error then wraps its context's. Each
// round finishes two jobs and fails two, and purges both statuses, one
// chunk each, so that a Purge may be cut between its chunks too.
func TestCancelledPurgeAnswersWhatHappened(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		const rounds = 200
		whole, cut, none := 0, 0, 0
		var wrong []string
		var took callTime // of whole purges
		for round := range rounds {
			f.at(int64(round) * 1000)
			var ids []string
			for i := range 4 {
				ids = append(ids, fmt.Sprintf("p%03d-%d", round, i))
				f.enqueue(leaseq.Job{ID: ids[i]})
			}
			for _, c := range claimAll(f, ids) {
				var ok bool
				var err error
				if c.ID[len(c.ID)-1] < '2' {
					ok, err = f.q.Finish(f.ctx, c)
				} else {
					ok, err = f.q.Fail(f.ctx, c, "broken")
				}
				if !ok || err != nil {
					t.Fatalf("settling %s: %v %v", c.ID, ok, err)
				}
			}
			f.at(int64(round)*1000 + 1)
			ctx, cancel := context.WithCancel(f.ctx)
			cutDelay(cancel, took.span())
			n, err := f.q.Purge(ctx, f.clock.Now(), leaseq.StatusDone, leaseq.StatusQuarantined)
			cancel()
			gone := 0
			for _, id := range ids {
				switch _, gerr := f.q.Get(f.ctx, id); {
				case errors.Is(gerr, leaseq.ErrNotFound):
					gone++
				case gerr != nil:
					t.Fatal(gerr)
				}
			}
			switch {
			case err == nil && n == 4 && gone == 4:
				whole++
			case errors.Is(err, context.Canceled) && n == gone && n < 4:
				if n == 0 {
					none++
				} else {
					cut++
				}
			default:
				wrong = append(wrong, fmt.Sprintf("round %d: Purge answered %d, %v with %d of its 4 jobs gone", round, n, err, gone))
			}
			if gone < 4 { // what is left goes now, so that the next round's purge finds only its own
				began := time.Now()
				if _, err := f.q.Purge(f.ctx, f.clock.Now(), leaseq.StatusDone, leaseq.StatusQuarantined); err != nil {
					t.Fatal(err)
				}
				if gone == 0 {
					took.add(time.Since(began))
				}
			}
		}
		t.Logf("%s: %d rounds: %d whole, %d cut between chunks, %d cancelled with nothing deleted, %d wrong", t.Name(), rounds, whole, cut, none, len(wrong))
		if len(wrong) > 0 {
			t.Errorf("%d of %d rounds answered other than what happened; the first: %s", len(wrong), rounds, wrong[0])
		}
		if whole == 0 || none == 0 {
			t.Errorf("%d rounds whole, %d cancelled: want both", whole, none)
		}
	})
}

// TestCancelledClaimAnswersWhatHappened: a Claim, a ClaimBatch and an
// InTx whose context is cancelled at a random point answer either their
// success, with the rows to show for it, or their context's error with
// nothing of them kept (a claim cut short is undone: its job is claimable
// again, rule 24) — never a driver's error such as database/sql's "bad
// connection", which pgx's closing of a cancelled query's connection lets
// through and reads as an outage. The reads (Get, List, Stats, Queues,
// Activity) answer theirs or their context's error too. Both answers must
// be seen for each writing call.
func TestCancelledClaimAnswersWhatHappened(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		for _, c := range cutClaims {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				f := clockFixture(t, e, "system")
				cutClaimRounds(t, f, c)
			})
		}
	})
}

// cutClaim is a call of TestCancelledClaimAnswersWhatHappened on the
// pending job id: it answers whether it took effect, and the check of its
// rows after an answer.
type cutClaim struct {
	name string
	call func(ctx context.Context, f *fixture, id string) (bool, error)
}

var cutClaims = []cutClaim{
	{"claim", func(ctx context.Context, f *fixture, id string) (bool, error) {
		c, ok, err := f.q.Claim(ctx, "w", time.Minute)
		if ok && c.ID != id {
			return false, fmt.Errorf("claimed %s, want %s", c.ID, id)
		}
		return ok, err
	}},
	{"claim batch", func(ctx context.Context, f *fixture, id string) (bool, error) {
		cs, err := f.q.ClaimBatch(ctx, "w", time.Minute, 3)
		if len(cs) > 0 && cs[0].ID != id {
			return false, fmt.Errorf("claimed %s, want %s", cs[0].ID, id)
		}
		return len(cs) == 1, err
	}},
	{"intx", func(ctx context.Context, f *fixture, id string) (bool, error) {
		err := f.q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error {
			return tx.Enqueue(ctx, leaseq.Job{ID: id + "-child"})
		})
		return err == nil, err
	}},
	{"reads", func(ctx context.Context, f *fixture, id string) (bool, error) {
		if _, err := f.q.Get(ctx, id); err != nil {
			return false, err
		}
		if _, err := f.q.List(ctx, leaseq.Filter{}); err != nil {
			return false, err
		}
		if _, err := f.q.Stats(ctx); err != nil {
			return false, err
		}
		if _, err := f.q.Activity(ctx, time.Now().Add(-time.Hour)); err != nil {
			return false, err
		}
		return true, nil
	}},
}

// cutClaimRounds runs the rounds of TestCancelledClaimAnswersWhatHappened
// for one call.
func cutClaimRounds(t *testing.T, f *fixture, cc cutClaim) {
	const rounds = 80
	done, cancelled := 0, 0
	var took callTime
	for i := range 5 { // how long the call takes uncancelled
		id := fmt.Sprintf("c%d", i)
		f.enqueue(leaseq.Job{ID: id})
		began := time.Now()
		if ok, err := cc.call(f.ctx, f, id); !ok || err != nil {
			t.Fatalf("%s, not cancelled: %v, %v", cc.name, ok, err)
		}
		took.add(time.Since(began))
		f.q.Cancel(f.ctx, id, "measured")
	}
	for round := range rounds {
		id := fmt.Sprintf("r%03d", round)
		f.enqueue(leaseq.Job{ID: id})
		ctx, cancel := context.WithCancel(f.ctx)
		cutDelay(cancel, took.span())
		ok, err := cc.call(ctx, f, id)
		cancel()
		switch {
		case ok && err == nil:
			done++
		case !ok && errors.Is(err, context.Canceled):
			cancelled++
		default:
			t.Fatalf("round %d: %s answered %v, %v; want its success or its context's error", round, cc.name, ok, err)
		}
		if msg := cutRowsProblem(f, cc.name, id, ok); msg != "" {
			t.Fatalf("round %d: %s answered %v, %v, but %s\n%s", round, cc.name, ok, err, msg, f.dump())
		}
		f.q.Cancel(f.ctx, id, "round over") // nothing of this round is claimed in the next
	}
	t.Logf("%s: %d rounds: %d done, %d cancelled", t.Name(), rounds, done, cancelled)
	if done == 0 || cancelled == 0 && cc.name != "reads" {
		t.Errorf("%d rounds done, %d cancelled: want both", done, cancelled)
	}
}

// cutRowsProblem says how the rows after a call of name on the job id
// disagree with its answer ok ("" if they agree). A claim cut short is
// undone after its answer, so a leased row is waited for, bounded.
func cutRowsProblem(f *fixture, name, id string, ok bool) string {
	switch name {
	case "claim", "claim batch":
		if ok {
			if s := f.get(id); s.Status != leaseq.StatusLeased {
				return "the job is " + string(s.Status)
			}
			return ""
		}
		for limit := time.Now().Add(10 * time.Second); f.get(id).Status == leaseq.StatusLeased; {
			if time.Now().After(limit) {
				return "the job is still leased 10 s later"
			}
			time.Sleep(5 * time.Millisecond) // polling the row, bounded by limit
		}
	case "intx":
		_, err := f.q.Get(f.ctx, id+"-child")
		if ok != (err == nil) {
			return fmt.Sprintf("Get of its job: %v", err)
		}
		if err == nil {
			f.q.Cancel(f.ctx, id+"-child", "round over")
		}
	}
	return ""
}
