package leaseq_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// SQLite only: this file deletes the rollback journal of a DELETE-mode
// database under the queue's feet.
//
// In DELETE mode the commit point is the journal's deletion. When someone
// else deleted it first, SQLite's own unlink fails and COMMIT reports
// SQLITE_IOERR_DELETE_NOENT although the transaction is in the file. Every
// write must then answer what the file says: nil exactly when its effect is
// there, an error exactly when it is not, and never a claim that is leased
// in the file but was not handed to its caller.

// journalJob is the model of one job: what its row must be, given the
// answers its calls got.
type journalJob struct {
	status leaseq.Status
	token  int64
	// poisoned: a call on the job got an error, so the test touches it no
	// more; its row must be as it was before that call.
	poisoned bool
}

// journalWorker drives its own named queue and models it from the answers.
type journalWorker struct {
	q      *leaseq.Queue
	jobs   map[string]*journalJob
	owner  string
	calls  int
	errs   int
	errLog []string
	// surprises are answers found wrong while the workload ran.
	surprises []string
}

// answered counts a call; an error is logged (a few) and reported.
func (w *journalWorker) answered(what string, err error) bool {
	w.calls++
	if err == nil {
		return true
	}
	w.errs++
	if len(w.errLog) < 3 {
		w.errLog = append(w.errLog, fmt.Sprintf("%s: %v", what, err))
	}
	return false
}

// enqueue enqueues n jobs, one Enqueue (grouped with the other workers'
// calls) or one EnqueueBatch.
func (w *journalWorker) enqueue(ctx context.Context, ids ...string) {
	var err error
	if len(ids) == 1 {
		err = w.q.Enqueue(ctx, leaseq.Job{ID: ids[0]})
	} else {
		jobs := make([]leaseq.Job, len(ids))
		for i, id := range ids {
			jobs[i] = leaseq.Job{ID: id}
		}
		err = w.q.EnqueueBatch(ctx, jobs)
	}
	if w.answered("enqueue", err) {
		for _, id := range ids {
			w.jobs[id] = &journalJob{status: leaseq.StatusPending}
		}
	}
}

// claim claims up to n jobs (Claim for one, ClaimBatch for more).
func (w *journalWorker) claim(ctx context.Context, n int) []leaseq.Claim {
	var cs []leaseq.Claim
	var err error
	if n == 1 {
		var c leaseq.Claim
		var ok bool
		c, ok, err = w.q.Claim(ctx, w.owner, time.Minute)
		if ok {
			cs = []leaseq.Claim{c}
		}
	} else {
		cs, err = w.q.ClaimBatch(ctx, w.owner, time.Minute, n)
	}
	if !w.answered("claim", err) {
		return nil
	}
	for _, c := range cs {
		j := w.jobs[c.ID]
		if j == nil {
			// Its enqueue said it failed; the final check reports that.
			j = &journalJob{poisoned: true}
			w.jobs[c.ID] = j
			w.surprises = append(w.surprises, fmt.Sprintf("%s: claimed, but its enqueue reported an error", c.ID))
		}
		j.status, j.token = leaseq.StatusLeased, c.Token
	}
	return cs
}

// settle ends claim c with the fenced call k (0 Finish, 1 Release,
// 2 Fail, 3 Extend and then Finish).
func (w *journalWorker) settle(ctx context.Context, c leaseq.Claim, k int) {
	j := w.jobs[c.ID]
	var ok bool
	var err error
	next := map[int]leaseq.Status{0: leaseq.StatusDone, 1: leaseq.StatusPending, 2: leaseq.StatusQuarantined, 3: leaseq.StatusDone}[k]
	switch k {
	case 0:
		ok, err = w.q.Finish(ctx, c)
	case 1:
		ok, err = w.q.Release(ctx, c, 0, "again")
	case 2:
		ok, err = w.q.Fail(ctx, c, "no")
	case 3:
		if c, ok, err = w.q.Extend(ctx, c, 2*time.Minute); err == nil && ok {
			ok, err = w.q.Finish(ctx, c)
		}
	}
	switch {
	case !w.answered("fenced call", err):
		j.poisoned = true
	case !ok:
		w.errs++
		w.errLog = append(w.errLog, fmt.Sprintf("fenced call on %+v refused", c))
		j.poisoned = true
	default:
		j.status = next
	}
}

// operate cancels a pending job or requeues a quarantined one.
func (w *journalWorker) operate(ctx context.Context, id string) {
	j := w.jobs[id]
	if j == nil || j.poisoned {
		return
	}
	var err error
	var next leaseq.Status
	switch j.status {
	case leaseq.StatusPending:
		err, next = w.q.Cancel(ctx, id, "stop"), leaseq.StatusQuarantined
	case leaseq.StatusQuarantined:
		err, next = w.q.Requeue(ctx, id), leaseq.StatusPending
	default:
		return
	}
	if w.answered("operator call", err) {
		j.status = next
	} else {
		j.poisoned = true
	}
}

// purge purges the jobs of status st, which must all go.
func (w *journalWorker) purge(ctx context.Context, st leaseq.Status) {
	_, err := w.q.Purge(ctx, t0.Add(time.Millisecond), st)
	if !w.answered("purge", err) {
		return
	}
	for id, j := range w.jobs {
		if j.status == st && !j.poisoned {
			delete(w.jobs, id)
		}
	}
}

// run is one worker's whole workload.
func (w *journalWorker) run(ctx context.Context, iterations int) {
	for i := range iterations {
		id := fmt.Sprintf("%s-%d", w.q.Name(), i)
		if i%5 == 0 {
			w.enqueue(ctx, id+"a", id+"b")
		} else {
			w.enqueue(ctx, id)
		}
		for k, c := range w.claim(ctx, 1+i%2) {
			w.settle(ctx, c, (i+k)%4)
		}
		if i%3 == 0 {
			w.operate(ctx, id)
			w.operate(ctx, fmt.Sprintf("%s-%d", w.q.Name(), i-2))
		}
	}
	w.purge(ctx, leaseq.StatusDone)
	w.purge(ctx, leaseq.StatusQuarantined)
}

// mismatches compares the worker's model with the rows of its queue in db
// and describes each job whose row disagrees with the answers its calls got:
// one per wrong answer (two for a batch of two).
func (w *journalWorker) mismatches(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT id, status, token FROM leaseq_jobs WHERE queue = ?1", w.q.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var bad []string
	seen := map[string]bool{}
	for rows.Next() {
		var id string
		var st leaseq.Status
		var token int64
		if err := rows.Scan(&id, &st, &token); err != nil {
			t.Fatal(err)
		}
		seen[id] = true
		j := w.jobs[id]
		switch {
		case j == nil:
			bad = append(bad, fmt.Sprintf("%s: in the file (%s, token %d), but its enqueue or purge said otherwise", id, st, token))
		case j.status != st || j.token != token:
			bad = append(bad, fmt.Sprintf("%s: file has %s token %d, the answers say %s token %d", id, st, token, j.status, j.token))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id, j := range w.jobs {
		if !seen[id] {
			bad = append(bad, fmt.Sprintf("%s: not in the file, the answers say %s token %d", id, j.status, j.token))
		}
	}
	return bad
}

// deleteJournal removes path's journal in a loop until stop is closed and
// returns how many times it removed one: each was the journal of a write
// transaction in progress.
func deleteJournal(path string, stop <-chan struct{}) (removed *atomic.Int64, done <-chan struct{}) {
	removed = new(atomic.Int64)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if os.Remove(path+"-journal") == nil {
				removed.Add(1)
			}
			runtime.Gosched()
		}
	}()
	return removed, finished
}

// TestJournalDeletedUnderLoad runs every kind of write on a DELETE-mode
// database (rule 26 allows it for a caller's own *sql.DB) while another
// goroutine deletes the rollback journal in a loop, then checks every answer
// against the file: nil exactly when the effect is there, an error exactly
// when it is not, and no job leased with a token no caller got. Single calls
// run grouped into shared commits, and each in a commit of its own.
func TestJournalDeletedUnderLoad(t *testing.T) {
	t.Parallel()
	for _, noGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableGroupCommit=%v", noGroup), func(t *testing.T) {
			t.Parallel()
			journalLoad(t, noGroup)
		})
	}
}

// journalLoad is one run of TestJournalDeletedUnderLoad.
func journalLoad(t *testing.T, noGroup bool) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(DELETE)&_pragma=synchronous(FULL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clock := leaseq.NewManualClock(t0)
	const workers, iterations = 6, 80
	ws := make([]*journalWorker, workers)
	for i := range ws {
		q, err := leaseq.New(ctx, db, leaseq.Options{Name: fmt.Sprintf("w%d", i), Clock: clock, MaxAttempts: 1000, DisableGroupCommit: noGroup})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		ws[i] = &journalWorker{q: q, jobs: map[string]*journalJob{}, owner: fmt.Sprintf("o%d", i)}
	}

	stop := make(chan struct{})
	removed, deleterDone := deleteJournal(path, stop)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx, iterations)
		}()
	}
	wg.Wait()
	close(stop)
	<-deleterDone

	var bad []string
	for _, w := range ws {
		bad = append(bad, w.surprises...)
		bad = append(bad, w.mismatches(t, db)...)
	}
	calls, errs, sample := journalSummary(ws)
	t.Logf("%d calls, %d errors, %d journals deleted under a write, %d answers the file contradicts; errors seen: %s",
		calls, errs, removed.Load(), len(bad), strings.Join(sample, "; "))
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%d answers the file contradicts:\n%s", len(bad), strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
	if removed.Load() == 0 {
		t.Errorf("the journal was never deleted under a write; the test proved nothing")
	}
	wantIntegrity(t, db)
}

// journalSummary prints the workers' counts and a few of their errors.
func journalSummary(ws []*journalWorker) (calls, errs int, sample []string) {
	for _, w := range ws {
		calls += w.calls
		errs += w.errs
		sample = append(sample, w.errLog...)
	}
	sort.Strings(sample)
	return calls, errs, sample[:min(len(sample), 5)]
}
