package leaseq_test

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
)

// chaosRow is a job's final row.
type chaosRow struct {
	qty                          int
	status, owner, reason        string
	token, attempts, maxAttempts int64
	leaseUntil, deadline         sql.NullInt64
}

// loggedOp is a history event with the incarnation that wrote it.
type loggedOp struct {
	histEvent
	inc *incarnation
}

// chaosReport is what checkHistory found.
type chaosReport struct {
	violations                               []string
	quarantines                              []string
	done, claims, unloggedClaims, deliveries int
	repeats                                  int // deliveries of a job already delivered
	refused, accepted, unloggedFinishes      int
}

// checkHistory checks the workers' histories, the final rows and the
// receiver against each other:
//
//   - every enqueued job is done or quarantined: none lost, none stuck;
//   - per job, each claim's token is new and equals its attempt, and the
//     final token equals the final attempts and the number of claims made;
//   - every claim's lease_until is min(at+lease, deadline);
//   - no claim was made before the previous claim's lease ended: no two
//     claims of a job overlap in time;
//   - every finish was accepted exactly when its clock reading was before
//     the claim's lease_until: never at or after it, and never refused
//     while the lease was live;
//   - at most one accepted finish per job; it carries the final token and
//     the job is done; a done job has one;
//   - every delivery the receiver got came from a logged claim with the
//     same owner and token; every done job was delivered; the receiver's
//     total is the sum of the qty of the distinct delivered IDs;
//   - PRAGMA integrity_check is ok.
//
// Unlogged operations. A worker writes a claim or finish line after the
// transaction committed, so a SIGKILL between COMMIT and the write leaves a
// committed operation with no line. Each killed incarnation (and only a
// killed one) may account for at most one such operation, and it must be
// its last: an unlogged claim only after a start or finish line (a worker
// claims next only then), an unlogged accepted finish only right after the
// deliver line of the job's final token by the same incarnation. A token
// missing from a job's history is accepted only if such an incarnation is
// left to account for it — and if it is the final token, one with the
// row's owner name. Everything else is a violation. Incarnations that were
// not killed must end with an exit line; a killed one may end in a torn
// line, which is ignored.
func checkHistory(t *testing.T, db *sql.DB, c *chaos, jobs []leaseq.Job, rcv *receiver) chaosReport {
	t.Helper()
	k := &checker{t: t, all: c.all, claims: map[string][]loggedOp{}, finishes: map[string][]loggedOp{},
		last: map[*incarnation]histEvent{}, logged: map[string]bool{}, delivered: map[string]bool{},
		spare: map[*incarnation]bool{}}
	k.loadRows(db)
	k.loadHistories()
	if len(k.rows) != len(jobs) {
		k.bad("table has %d rows, %d jobs were enqueued", len(k.rows), len(jobs))
	}
	for _, j := range jobs {
		k.checkJob(j)
	}
	k.accountForUnloggedClaims(jobs)
	k.checkReceiver(rcv)
	return k.rep
}

// checker is the state of one checkHistory run.
type checker struct {
	t        *testing.T
	all      []*incarnation
	rep      chaosReport
	rows     map[string]*chaosRow
	claims   map[string][]loggedOp // per job, by token once checked
	finishes map[string][]loggedOp // per job
	last     map[*incarnation]histEvent
	// logged and delivered hold "job/owner/token" of logged claims and
	// deliveries.
	logged, delivered map[string]bool
	// spare holds the killed incarnations that may still account for one
	// unlogged operation.
	spare map[*incarnation]bool
}

func (k *checker) bad(format string, args ...any) {
	k.rep.violations = append(k.rep.violations, fmt.Sprintf(format, args...))
}

func opKey(job, owner string, token int64) string { return fmt.Sprint(job, "/", owner, "/", token) }

// loadRows reads the final rows and runs integrity_check.
func (k *checker) loadRows(db *sql.DB) {
	var ic string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ic); err != nil || ic != "ok" {
		k.bad("PRAGMA integrity_check: %q, %v", ic, err)
	}
	k.rows = map[string]*chaosRow{}
	rs, err := db.Query("SELECT id, qty, status, owner, reason, token, attempts, max_attempts, lease_until, deadline FROM leaseq_jobs")
	if err != nil {
		k.t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var id string
		r := &chaosRow{}
		if err := rs.Scan(&id, &r.qty, &r.status, &r.owner, &r.reason, &r.token, &r.attempts, &r.maxAttempts, &r.leaseUntil, &r.deadline); err != nil {
			k.t.Fatal(err)
		}
		k.rows[id] = r
	}
	if err := rs.Err(); err != nil {
		k.t.Fatal(err)
	}
}

// loadHistories reads every incarnation's history and indexes it by job.
func (k *checker) loadHistories() {
	for _, inc := range k.all {
		evs, torn, err := readHistory(inc.hist)
		if err != nil {
			k.t.Fatal(err)
		}
		switch {
		case torn && !inc.killed:
			k.bad("%s.%d: torn history line, but it was not killed", inc.name, inc.n)
		case !inc.killed && (len(evs) == 0 || evs[len(evs)-1].Ev != "exit"):
			k.bad("%s.%d: history does not end with exit, but it was not killed", inc.name, inc.n)
		}
		if len(evs) > 0 {
			k.last[inc] = evs[len(evs)-1]
		}
		if inc.killed {
			k.spare[inc] = true
		}
		for _, e := range evs {
			op := loggedOp{e, inc}
			switch e.Ev {
			case "claim":
				if e.Owner != inc.name {
					k.bad("%s.%d logged a claim as %q", inc.name, inc.n, e.Owner)
				}
				k.claims[e.Job] = append(k.claims[e.Job], op)
				k.logged[opKey(e.Job, e.Owner, e.Token)] = true
			case "finish":
				k.finishes[e.Job] = append(k.finishes[e.Job], op)
			case "deliver":
				k.delivered[opKey(e.Job, e.Owner, e.Token)] = true
			}
		}
	}
}

// checkJob checks one job's final row, claims and finishes.
func (k *checker) checkJob(j leaseq.Job) {
	r := k.rows[j.ID]
	if r == nil {
		k.bad("%s: enqueued, but no row: lost", j.ID)
		return
	}
	switch r.status {
	case "done":
		k.rep.done++
	case "quarantined":
		k.rep.quarantines = append(k.rep.quarantines, fmt.Sprintf("%s after %d/%d attempts: %s", j.ID, r.attempts, r.maxAttempts, r.reason))
		if r.reason == "" {
			k.bad("%s: quarantined without a reason", j.ID)
		}
	default:
		k.bad("%s: %s at the end: stuck", j.ID, r.status)
	}
	if r.qty != j.Qty {
		k.bad("%s: qty %d, enqueued %d", j.ID, r.qty, j.Qty)
	}
	if r.token != r.attempts {
		k.bad("%s: token %d but attempts %d", j.ID, r.token, r.attempts)
	}
	k.rep.claims += int(r.token)
	final := k.checkClaims(j.ID, r)
	k.checkFinishes(j.ID, r, final)
}

// checkClaims checks a job's logged claims in token order and returns the
// claim of the final token, if it was logged.
func (k *checker) checkClaims(id string, r *chaosRow) *loggedOp {
	cs := k.claims[id]
	slices.SortFunc(cs, func(a, b loggedOp) int { return int(a.Token - b.Token) })
	var prev *loggedOp
	for i := range cs {
		cl := &cs[i]
		want := cl.At + chaosLease.Milliseconds()
		if cl.Deadline != 0 && cl.Deadline < want {
			want = cl.Deadline
		}
		switch {
		case prev != nil && cl.Token == prev.Token:
			k.bad("%s: token %d handed out twice (%s.%d and %s.%d)", id, cl.Token, prev.inc.name, prev.inc.n, cl.inc.name, cl.inc.n)
		case cl.Token > r.token:
			k.bad("%s: claim with token %d, final token %d", id, cl.Token, r.token)
		case int64(cl.Attempt) != cl.Token:
			k.bad("%s: claim token %d has attempt %d", id, cl.Token, cl.Attempt)
		case cl.LeaseUntil != want:
			k.bad("%s: token %d at %d has lease_until %d, want min(at+lease, deadline) = %d", id, cl.Token, cl.At, cl.LeaseUntil, want)
		case prev != nil && cl.At < prev.LeaseUntil:
			k.bad("%s: token %d claimed by %s at %d, while token %d of %s was leased until %d: overlap",
				id, cl.Token, cl.Owner, cl.At, prev.Token, prev.Owner, prev.LeaseUntil)
		}
		prev = cl
	}
	if len(cs) == 0 || cs[len(cs)-1].Token != r.token {
		return nil
	}
	final := &cs[len(cs)-1]
	if final.Owner != r.owner || !r.leaseUntil.Valid || final.LeaseUntil != r.leaseUntil.Int64 {
		k.bad("%s: final row owner=%s lease_until=%v, but the claim of token %d says owner=%s lease_until=%d",
			id, r.owner, r.leaseUntil.Int64, r.token, final.Owner, final.LeaseUntil)
	}
	return final
}

// checkFinishes checks a job's finishes against its claims and row.
func (k *checker) checkFinishes(id string, r *chaosRow, final *loggedOp) {
	accepted := 0
	for _, f := range k.finishes[id] {
		var cl *loggedOp
		for i, c := range k.claims[id] {
			if c.Token == f.Token && c.inc == f.inc {
				cl = &k.claims[id][i]
			}
		}
		if cl == nil {
			k.bad("%s: %s.%d finished token %d without a logged claim of it", id, f.inc.name, f.inc.n, f.Token)
			continue
		}
		if f.OK != (f.At < cl.LeaseUntil) {
			k.bad("%s: finish of token %d at %d returned %v, lease_until %d (accepted must be exactly at < lease_until)",
				id, f.Token, f.At, f.OK, cl.LeaseUntil)
		}
		if !f.OK {
			k.rep.refused++
			continue
		}
		accepted++
		k.rep.accepted++
		if f.Token != r.token || r.status != "done" {
			k.bad("%s: accepted finish of token %d, but the row has token %d, status %s", id, f.Token, r.token, r.status)
		}
	}
	if r.status == "done" && accepted == 0 {
		// Only the incarnation that claimed the final token, killed right
		// after its deliver line, can have finished it unlogged.
		if final != nil && k.spare[final.inc] && k.last[final.inc] == (histEvent{Ev: "deliver", Job: id, Owner: final.Owner, Token: r.token}) {
			k.spare[final.inc] = false
			accepted++
			k.rep.unloggedFinishes++
			k.rep.accepted++
		} else {
			k.bad("%s: done, but no accepted finish is logged or can be accounted for", id)
		}
	}
	if accepted > 1 {
		k.bad("%s: %d accepted finishes", id, accepted)
	}
}

// canClaimUnlogged reports whether inc may account for an unlogged claim:
// it was killed, has not accounted for anything yet, and its last line is
// one after which a worker claims next.
func (k *checker) canClaimUnlogged(inc *incarnation) bool {
	e, ok := k.last[inc]
	return k.spare[inc] && ok && (e.Ev == "start" || e.Ev == "finish")
}

// accountForUnloggedClaims matches the tokens missing from the histories
// with killed incarnations: the final token of a job needs one with the
// row's owner name, any other token any one. The constrained ones are
// matched first.
func (k *checker) accountForUnloggedClaims(jobs []leaseq.Job) {
	unconstrained := 0
	for _, j := range jobs {
		r := k.rows[j.ID]
		if r == nil {
			continue
		}
		have := map[int64]bool{}
		for _, cl := range k.claims[j.ID] {
			have[cl.Token] = true
		}
		for tok := int64(1); tok <= r.token; tok++ {
			if have[tok] {
				continue
			}
			k.rep.unloggedClaims++
			if tok != r.token {
				unconstrained++
			} else if !k.takeSpare(r.owner) {
				k.bad("%s: final token %d (owner %s) has no logged claim and no killed %s incarnation to account for it", j.ID, tok, r.owner, r.owner)
			}
		}
	}
	for ; unconstrained > 0 && k.takeSpare(""); unconstrained-- {
	}
	if unconstrained > 0 {
		k.bad("%d tokens have no logged claim and no killed incarnation left to account for them", unconstrained)
	}
}

// takeSpare uses up a killed incarnation that can account for an unlogged
// claim, named name if name is not empty.
func (k *checker) takeSpare(name string) bool {
	for _, inc := range k.all {
		if (name == "" || inc.name == name) && k.canClaimUnlogged(inc) {
			k.spare[inc] = false
			return true
		}
	}
	return false
}

// checkReceiver checks what the receiver got against the histories and
// rows.
func (k *checker) checkReceiver(rcv *receiver) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	k.rep.deliveries = len(rcv.deliveries)
	k.rep.repeats = len(rcv.deliveries) - len(rcv.qty)
	received := map[string]bool{}
	for _, d := range rcv.deliveries {
		key := opKey(d.job, d.owner, d.token)
		received[key] = true
		if !k.logged[key] {
			k.bad("receiver got %s token %d from %s, which has no logged claim", d.job, d.token, d.owner)
		}
	}
	for key := range k.delivered {
		if !received[key] {
			k.bad("logged delivery %s never reached the receiver", key)
		}
	}
	sum := 0
	for id, qty := range rcv.qty {
		r := k.rows[id]
		if r == nil {
			k.bad("receiver got unknown job %s", id)
			continue
		}
		if qty != r.qty {
			k.bad("%s: receiver recorded qty %d, the job has %d", id, qty, r.qty)
		}
		sum += r.qty
	}
	if sum != rcv.total {
		k.bad("receiver total %d, want %d, the sum of the qty of the %d distinct delivered jobs", rcv.total, sum, len(rcv.qty))
	}
	for id, r := range k.rows {
		if _, ok := rcv.qty[id]; r.status == "done" && !ok {
			k.bad("%s: done but never delivered", id)
		}
	}
}

// readHistory reads a history file. A last line that does not parse is a
// torn write of a killed process; any other bad line is an error.
func readHistory(path string) ([]histEvent, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var evs []histEvent
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	torn := false
	for sc.Scan() {
		if torn {
			return nil, false, fmt.Errorf("%s: unparsable line before the last", path)
		}
		var e histEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			torn = true
			continue
		}
		evs = append(evs, e)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		torn = true
	}
	return evs, torn, sc.Err()
}

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
