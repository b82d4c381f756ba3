package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// Bounds of TestPostgresFrozenServer.
const (
	frozenCallContext = time.Second      // each call's context
	frozenCallBound   = 4 * time.Second  // how long after that it may take to return
	frozenFor         = 12 * time.Second // when the server is let go, if the call has not returned
)

// frozenServer is a queue on a pool whose connections can be frozen: their
// backends stopped with SIGSTOP, a server that stops answering (rule 24).
type frozenServer struct {
	t     *testing.T
	q     *leaseq.Queue
	db    *sql.DB // the queue's pool, application_name frozenApp
	admin *sql.DB // another pool on the same database, never frozen
}

const frozenApp = "leaseq_frozen"

// frozenConns is the size of the queue's pool: every connection it has is
// frozen, so that a call cannot get a healthy one.
const frozenConns = 3

func newFrozenServer(t *testing.T) *frozenServer {
	t.Helper()
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db := openPostgres(t, url+sep+"application_name="+frozenApp)
	db.SetMaxOpenConns(frozenConns)
	db.SetMaxIdleConns(frozenConns)
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return &frozenServer{t: t, q: q, db: db, admin: openPostgres(t, url)}
}

// freeze checks out every connection of the queue's pool twice (so that
// each was just checked out and the pool does not ping it at its next use:
// a ping on a frozen connection ends with the caller's context, whatever
// the queue does) and stops their backends.
func (f *frozenServer) freeze() (thaw func()) {
	f.t.Helper()
	ctx := context.Background()
	var pids []int
	for round := range 2 {
		var conns []*sql.Conn
		for range frozenConns {
			c, err := f.db.Conn(ctx)
			if err != nil {
				f.t.Fatal(err)
			}
			conns = append(conns, c)
			var pid int
			if err := c.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				f.t.Fatal(err)
			}
			if round == 1 {
				pids = append(pids, pid)
			}
		}
		for _, c := range conns {
			c.Close()
		}
	}
	return pgtest.Freeze(f.t, pids...)
}

// TestPostgresFrozenServer calls each method with a one-second context
// while the server does not answer the queue's connections: each returns
// within a few seconds of its context's end, with its context's error, or
// an error saying it cannot know what happened to the statement it sent —
// never after the freeze (rule 24). Once the server goes on, no job is
// left leased: a claim that the server committed after its caller left is
// released. The pool has no connection that is not frozen.
func TestPostgresFrozenServer(t *testing.T) {
	t.Parallel()
	f := newFrozenServer(t)
	q := f.q
	ctx := context.Background()
	for i := range 20 {
		mustEnqueue(t, q, leaseq.Job{ID: fmt.Sprint("p", i)})
	}
	claim, _, err := q.Claim(ctx, "holder", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, q, leaseq.Job{ID: "q"})
	if err := q.Cancel(ctx, "q", "to requeue"); err != nil {
		t.Fatal(err)
	}
	claims := func(cs ...leaseq.Claim) []leaseq.Claim { return cs }
	calls := []struct {
		name string
		call func(ctx context.Context) ([]leaseq.Claim, error)
	}{
		{"Claim", func(ctx context.Context) ([]leaseq.Claim, error) {
			c, ok, err := q.Claim(ctx, "w", time.Hour)
			if !ok {
				return nil, err
			}
			return claims(c), err
		}},
		{"ClaimBatch", func(ctx context.Context) ([]leaseq.Claim, error) { return q.ClaimBatch(ctx, "w", time.Hour, 5) }},
		{"Cancel", func(ctx context.Context) ([]leaseq.Claim, error) { return nil, q.Cancel(ctx, "p19", "stop") }},
		{"Requeue", func(ctx context.Context) ([]leaseq.Claim, error) { return nil, q.Requeue(ctx, "q") }},
		{"Purge", func(ctx context.Context) ([]leaseq.Claim, error) {
			_, err := q.Purge(ctx, time.Now().Add(time.Hour), leaseq.StatusQuarantined)
			return nil, err
		}},
		{"Work", func(ctx context.Context) ([]leaseq.Claim, error) {
			err := q.Work(ctx, leaseq.WorkerOptions{Owner: "w", Concurrency: 4, DrainTimeout: time.Second},
				func(context.Context, leaseq.Claim) error { return nil })
			return nil, cmpErr(err, ctx.Err())
		}},
		{"Extend", func(ctx context.Context) ([]leaseq.Claim, error) {
			_, _, err := q.Extend(ctx, claim, time.Hour)
			return nil, err
		}},
		{"Release", func(ctx context.Context) ([]leaseq.Claim, error) {
			_, err := q.Release(ctx, claim, 0, "again")
			return nil, err
		}},
		{"FinishBatch", func(ctx context.Context) ([]leaseq.Claim, error) {
			_, err := q.FinishBatch(ctx, []leaseq.Claim{claim})
			return nil, err
		}},
		{"Get", func(ctx context.Context) ([]leaseq.Claim, error) { _, err := q.Get(ctx, "p0"); return nil, err }},
		{"Stats", func(ctx context.Context) ([]leaseq.Claim, error) { _, err := q.Stats(ctx); return nil, err }},
	}
	// These calls are one statement each, with no transaction, sent to
	// the frozen backend, which carries it out once it goes on: they
	// cannot know whether it was written, and may say so instead of
	// answering their context's error (the errors table), wrapping none.
	sent := map[string]bool{"Extend": true, "Release": true, "FinishBatch": true}
	type answer struct {
		cs  []leaseq.Claim
		err error
	}
	for _, c := range calls {
		thaw := f.freeze()
		cctx, cancel := context.WithTimeout(ctx, frozenCallContext)
		began := time.Now()
		done := make(chan answer, 1)
		go func() {
			cs, err := c.call(cctx)
			done <- answer{cs, err}
		}()
		letGo := time.AfterFunc(frozenFor, thaw)
		got := waitWithin(t, done, frozenFor+30*time.Second, c.name+" on a frozen server")
		late := time.Since(began) - frozenCallContext
		letGo.Stop()
		thaw()
		cancel()
		t.Logf("%s returned %v after its context ended: %d claims, %v", c.name, late.Round(time.Millisecond), len(got.cs), got.err)
		if late > frozenCallBound {
			t.Errorf("%s on a frozen server returned %v after its %v context ended, want within %v",
				c.name, late.Round(time.Millisecond), frozenCallContext, frozenCallBound)
		}
		unknown := sent[c.name] && got.err != nil && strings.Contains(got.err.Error(), "not known") && !errors.Is(got.err, context.Canceled)
		if !errors.Is(got.err, context.DeadlineExceeded) && !unknown {
			t.Errorf("%s on a frozen server: %v, want its context's error", c.name, got.err)
		}
		if len(got.cs) > 0 {
			if _, err := q.FinishBatch(ctx, got.cs); err != nil {
				t.Fatal(err)
			}
		}
		f.noLeaseLeftBut(claim, c.name)
	}
	// Work's step, sent before its context ended, claimed once the server
	// went on, after Work had left: those claims were released, not run.
	var undone int
	err = f.admin.QueryRow(`SELECT count(*) FROM leaseq_jobs
		WHERE status = 'pending' AND token = 1 AND attempts = 1 AND reason LIKE 'claim undone%'`).Scan(&undone)
	if err != nil || undone == 0 {
		t.Errorf("%d jobs released as claims undone, %v; want Work's claims released", undone, err)
	}
}

// cmpErr is err, or else want: Work returns nil after its context ended.
func cmpErr(err, want error) error {
	if err != nil {
		return err
	}
	return want
}

// noLeaseLeftBut waits until no job is leased but by the claim c, which
// the calls under test extend and release: a claim that the server
// committed after its caller left must be released, not left leased to
// nobody until its lease ends.
func (f *frozenServer) noLeaseLeftBut(c leaseq.Claim, what string) {
	f.t.Helper()
	limit := time.Now().Add(30 * time.Second)
	for {
		var ids []string
		rows, err := f.admin.Query("SELECT id FROM leaseq_jobs WHERE status = 'leased' AND NOT (id = $1 AND token = $2) ORDER BY id",
			c.ID, c.Token)
		if err != nil {
			f.t.Fatal(err)
		}
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ids = append(ids, id)
		}
		rows.Close()
		if len(ids) == 0 {
			return
		}
		if time.Now().After(limit) {
			f.t.Errorf("after %s: jobs %v still leased 30s after the server went on, to a caller that got an error", what, ids)
			return
		}
		time.Sleep(10 * time.Millisecond) // polling the table, bounded by limit
	}
}
