package leaseq_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
)

// checkerCase is a small history, made by running the real queue on a
// manual clock and writing down what chaos workers would have logged, for
// testing checkHistory itself: a checker that cannot fail proves nothing.
type checkerCase struct {
	f    *fixture
	jobs []leaseq.Job
	incs []*incarnation
	hist [][]histEvent
	rcv  *receiver
}

// newCheckerCase is a clean history:
//
//	0ms   w1 claims j1 (token 1, lease_until 150); delivers; 10ms finishes: accepted
//	20ms  w2 claims j2 (token 1, lease_until 170); is killed while delivering
//	170ms w1 claims j2 (token 2, lease_until 320); delivers; 180ms finishes: accepted
func newCheckerCase(t *testing.T) *checkerCase {
	f := newFixture(t, leaseq.Options{})
	cc := &checkerCase{f: f, jobs: []leaseq.Job{{ID: "j1", Qty: 2}, {ID: "j2", Qty: 3}},
		rcv: &receiver{qty: map[string]int{}}}
	for _, j := range cc.jobs {
		f.enqueue(j)
	}
	abs := func(n int64) int64 { return ms(n).UnixMilli() }
	claim := func(at int64, owner string) histEvent {
		c := f.at(at).mustClaim(owner, chaosLease)
		return histEvent{Ev: "claim", Job: c.ID, Owner: owner, Token: c.Token, Attempt: c.Attempt,
			LeaseUntil: c.LeaseUntil.UnixMilli(), At: abs(at)}
	}
	finish := func(at int64, cl histEvent) histEvent {
		ok := f.at(at).finish(leaseq.Claim{ID: cl.Job, Owner: cl.Owner, Token: cl.Token})
		return histEvent{Ev: "finish", Job: cl.Job, Owner: cl.Owner, Token: cl.Token, OK: ok, At: abs(at)}
	}
	deliver := func(cl histEvent, qty int) histEvent {
		cc.rcv.deliveries = append(cc.rcv.deliveries, delivery{job: cl.Job, owner: cl.Owner, token: cl.Token, qty: qty})
		if _, seen := cc.rcv.qty[cl.Job]; !seen {
			cc.rcv.qty[cl.Job] = qty
			cc.rcv.total += qty
		}
		return histEvent{Ev: "deliver", Job: cl.Job, Owner: cl.Owner, Token: cl.Token}
	}
	c1 := claim(0, "w1")
	w1 := []histEvent{{Ev: "start", Owner: "w1"}, c1, deliver(c1, 2), finish(10, c1)}
	c2 := claim(20, "w2")
	w2 := []histEvent{{Ev: "start", Owner: "w2"}, c2}
	c3 := claim(170, "w1")
	w1 = append(w1, c3, deliver(c3, 3), finish(180, c3), histEvent{Ev: "exit", Owner: "w1"})
	cc.incs = []*incarnation{{name: "w1"}, {name: "w2", killed: true}}
	cc.hist = [][]histEvent{w1, w2}
	return cc
}

// check writes the histories and runs the checker.
func (cc *checkerCase) check(t *testing.T) chaosReport {
	dir := t.TempDir()
	for i, inc := range cc.incs {
		inc.hist = filepath.Join(dir, inc.name+".jsonl")
		var b []byte
		for _, e := range cc.hist[i] {
			line, _ := json.Marshal(e)
			b = append(append(b, line...), '\n')
		}
		if err := os.WriteFile(inc.hist, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return checkHistory(t, cc.f.db, &chaos{all: cc.incs}, cc.jobs, cc.rcv)
}

// edit finds the event of incarnation inc matching ev, job and token.
func (cc *checkerCase) edit(inc int, ev, job string, token int64) *histEvent {
	for i := range cc.hist[inc] {
		if e := &cc.hist[inc][i]; e.Ev == ev && e.Job == job && e.Token == token {
			return e
		}
	}
	panic("no such event")
}

func (cc *checkerCase) drop(inc int, ev, job string, token int64) {
	h := cc.hist[inc]
	for i := range h {
		if h[i].Ev == ev && h[i].Job == job && h[i].Token == token {
			cc.hist[inc] = append(h[:i:i], h[i+1:]...)
			return
		}
	}
	panic("no such event")
}

// TestChaosCheckerCatches feeds checkHistory a clean history, histories
// with the loss a kill may cause (which it must accept), and histories
// with each kind of violation (which it must report).
func TestChaosCheckerCatches(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		rep := newCheckerCase(t).check(t)
		if len(rep.violations) != 0 || rep.done != 2 || rep.claims != 3 || rep.accepted != 2 {
			t.Fatalf("got %+v, want no violations, 2 done, 3 claims, 2 accepted", rep)
		}
	})
	t.Run("claim line lost by a killed worker", func(t *testing.T) {
		cc := newCheckerCase(t)
		cc.drop(1, "claim", "j2", 1)
		rep := cc.check(t)
		if len(rep.violations) != 0 || rep.unloggedClaims != 1 {
			t.Fatalf("got %+v, want no violations and 1 unlogged claim", rep)
		}
	})
	t.Run("finish line lost by a killed worker", func(t *testing.T) {
		cc := newCheckerCase(t)
		cc.drop(0, "finish", "j2", 2)
		cc.drop(0, "exit", "", 0)
		cc.incs[0].killed = true
		rep := cc.check(t)
		if len(rep.violations) != 0 || rep.unloggedFinishes != 1 {
			t.Fatalf("got %+v, want no violations and 1 unlogged finish", rep)
		}
	})
	violations := []struct {
		name, want string
		tamper     func(cc *checkerCase)
	}{
		{"claim line lost without a kill", "no killed incarnation left", func(cc *checkerCase) {
			cc.drop(1, "claim", "j2", 1)
			cc.incs[1].killed = false
			cc.hist[1] = append(cc.hist[1], histEvent{Ev: "exit", Owner: "w2"})
		}},
		{"finish line lost without a kill", "no accepted finish", func(cc *checkerCase) {
			cc.drop(0, "finish", "j2", 2)
		}},
		{"overlapping claims", "overlap", func(cc *checkerCase) {
			e := cc.edit(0, "claim", "j2", 2)
			e.At, e.LeaseUntil = e.At-10, e.LeaseUntil-10
		}},
		{"lease_until not min(at+lease, deadline)", "want min(at+lease, deadline)", func(cc *checkerCase) {
			cc.edit(0, "claim", "j1", 1).LeaseUntil++
		}},
		{"accepted at lease end", "accepted must be exactly", func(cc *checkerCase) {
			e := cc.edit(0, "finish", "j1", 1)
			e.At = cc.edit(0, "claim", "j1", 1).LeaseUntil
		}},
		{"refused while the lease was live", "accepted must be exactly", func(cc *checkerCase) {
			cc.edit(0, "finish", "j1", 1).OK = false
		}},
		{"a stale token accepted", "accepted finish of token 1", func(cc *checkerCase) {
			cc.hist[1] = append(cc.hist[1], histEvent{Ev: "finish", Job: "j2", Owner: "w2", Token: 1, OK: true,
				At: cc.edit(1, "claim", "j2", 1).At + 5})
		}},
		{"a token handed out twice", "handed out twice", func(cc *checkerCase) {
			e := *cc.edit(1, "claim", "j2", 1)
			e.Job = "j1"
			cc.hist[1] = append(cc.hist[1], e)
		}},
		{"attempt not equal to token", "has attempt", func(cc *checkerCase) {
			cc.edit(0, "claim", "j1", 1).Attempt = 2
		}},
		{"a job stuck", "stuck", func(cc *checkerCase) {
			j := leaseq.Job{ID: "j3", Qty: 1}
			cc.f.enqueue(j)
			cc.jobs = append(cc.jobs, j)
		}},
		{"a job lost", "no row: lost", func(cc *checkerCase) {
			cc.jobs = append(cc.jobs, leaseq.Job{ID: "j4", Qty: 1})
		}},
		{"done but never delivered", "never delivered", func(cc *checkerCase) {
			cc.rcv.deliveries = cc.rcv.deliveries[1:]
			delete(cc.rcv.qty, "j1")
			cc.rcv.total -= 2
		}},
		{"a delivery without a claim", "has no logged claim", func(cc *checkerCase) {
			cc.rcv.deliveries = append(cc.rcv.deliveries, delivery{job: "j1", owner: "w3", token: 1, qty: 2})
		}},
		{"receiver total off", "receiver total", func(cc *checkerCase) {
			cc.rcv.total++
		}},
	}
	for _, v := range violations {
		t.Run(v.name, func(t *testing.T) {
			cc := newCheckerCase(t)
			v.tamper(cc)
			rep := cc.check(t)
			for _, got := range rep.violations {
				if strings.Contains(got, v.want) {
					return
				}
			}
			t.Fatalf("violations: %q; want one containing %q", rep.violations, v.want)
		})
	}
}
