package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// cutHold is how long the proxy holds back the answer to a call's COMMIT
// or statement: longer than the second a call gives its server after its
// context ends, and than the second its read of what happened may take.
const cutHold = 5 * time.Second

// TestPostgresWriteCutShortFindsOut: a call whose context ends as its
// COMMIT (or, on the server's clock, its one statement) goes out, and
// whose answer the server does not give within a second, finds out what
// happened with one read and answers with it: the server carried the call
// out, so the answer is the call's success, as the row shows, and it comes
// before the held answer would have. When the read gets no answer either
// (every answer held), the call says that whether it was written is not
// known, and its error wraps no context error. The proxy of
// TestPostgresClaimCutShortIsUndone ends the context as the message passes
// and holds back the answers on that connection.
func TestPostgresWriteCutShortFindsOut(t *testing.T) {
	t.Parallel()
	type call func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error)
	operator := func(fn func(ctx context.Context, q *leaseq.Queue) error) call {
		return func(ctx context.Context, q *leaseq.Queue, _ leaseq.Claim) (bool, error) {
			err := fn(ctx, q)
			return err == nil, err
		}
	}
	finish := func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) { return q.Finish(ctx, c) }
	isDone := func(s leaseq.State) bool { return s.Status == leaseq.StatusDone && s.Token == 1 }
	for _, c := range []struct {
		name   string
		server bool   // on the server's clock, not an injected one
		word   string // what the cut message contains
		silent bool   // the read's answers are held too
		prep   string // "claim", "fail", "finish": what is done to the job first
		call   call
		shows  func(s leaseq.State) bool // the call's effect on the row
	}{
		{"cancel", false, "commit", false, "", operator(func(ctx context.Context, q *leaseq.Queue) error { return q.Cancel(ctx, "cut-me", "stop") }),
			func(s leaseq.State) bool { return s.Status == leaseq.StatusQuarantined && s.Reason == "stop" }},
		{"requeue", false, "commit", false, "fail", operator(func(ctx context.Context, q *leaseq.Queue) error { return q.Requeue(ctx, "cut-me") }),
			func(s leaseq.State) bool { return s.Status == leaseq.StatusPending && s.Attempts == 0 }},
		{"requeue unanswered", false, "commit", true, "fail", operator(func(ctx context.Context, q *leaseq.Queue) error { return q.Requeue(ctx, "cut-me") }),
			func(s leaseq.State) bool { return s.Status == leaseq.StatusPending && s.Attempts == 0 }},
		{"purge", false, "commit", false, "finish", func(ctx context.Context, q *leaseq.Queue, _ leaseq.Claim) (bool, error) {
			n, err := q.Purge(ctx, t0.Add(time.Millisecond))
			return n == 1 && err == nil, err
		}, nil},
		{"finish", false, "commit", false, "claim", finish, isDone},
		{"finish on the server's clock", true, "cut-me", false, "claim", finish, isDone},
		{"finish unanswered on the server's clock", true, "cut-me", true, "claim", finish, isDone},
		{"extend on the server's clock", true, "cut-me", false, "claim", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
			e, ok, err := q.Extend(ctx, c, time.Hour)
			if ok && e.LeaseUntil.Sub(c.LeaseUntil) < 50*time.Minute {
				t.Errorf("Extend answered lease until %v; the claim's was %v", e.LeaseUntil, c.LeaseUntil)
			}
			return ok, err
		}, func(s leaseq.State) bool {
			return s.Status == leaseq.StatusLeased && time.Until(s.LeaseUntil) > 50*time.Minute
		}},
		{"release on the server's clock", true, "cut-me", false, "claim", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
			return q.Release(ctx, c, time.Hour, "later")
		}, func(s leaseq.State) bool { return s.Status == leaseq.StatusPending && s.Reason == "later" }},
		{"fail on the server's clock", true, "cut-me", false, "claim", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
			return q.Fail(ctx, c, "broken")
		}, func(s leaseq.State) bool { return s.Status == leaseq.StatusQuarantined && s.Reason == "broken" }},
		{"finish batch on the server's clock", true, "cut-me", false, "claim", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
			oks, err := q.FinishBatch(ctx, []leaseq.Claim{c, {ID: "other", Owner: "w", Token: 1}})
			return err == nil && len(oks) == 2 && oks[0] && !oks[1], err
		}, isDone},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			direct := pgtest.URL(t)
			px := startSlowProxy(t, direct)
			q := openPostgresQueue(t, px.url)
			if c.server {
				db, err := sql.Open("pgx", px.url)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if q, err = leaseq.New(ctx, db, leaseq.Options{}); err != nil {
					t.Fatal(err)
				}
				defer q.Close()
			}
			if err := q.Enqueue(ctx, leaseq.Job{ID: "cut-me"}); err != nil {
				t.Fatal(err)
			}
			var claim leaseq.Claim
			if c.prep != "" {
				var ok bool
				var err error
				if claim, ok, err = q.Claim(ctx, "w", 10*time.Minute); !ok || err != nil {
					t.Fatalf("Claim: %v %v", ok, err)
				}
				switch c.prep {
				case "fail":
					ok, err = q.Fail(ctx, claim, "broken")
				case "finish":
					ok, err = q.Finish(ctx, claim)
				}
				if !ok || err != nil {
					t.Fatalf("%s: %v %v", c.prep, ok, err)
				}
			}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			px.onSend(c.word, cutHold, func() {
				if c.silent {
					px.holdAnswers(cutHold)
				}
				cancel()
			})
			began := time.Now()
			ok, err := c.call(cctx, q, claim)
			took := time.Since(began)
			px.holdAnswers(0)
			if took >= cutHold-time.Second {
				t.Fatalf("the call took %v: it waited for the held answer", took)
			}
			if c.silent {
				if err == nil || !strings.Contains(err.Error(), "not known") || errors.Is(err, context.Canceled) {
					t.Fatalf("answer %v, %v with no answer to the read either; want an error saying it is not known, wrapping no context error", ok, err)
				}
			} else if !ok || err != nil {
				t.Fatalf("answer %v, %v; want the call's success, which the server carried out", ok, err)
			}
			t.Logf("answer %v, %v after %v", ok, err, took)
			row, err := openPostgresQueue(t, direct).Get(ctx, "cut-me")
			switch {
			case c.shows == nil && !errors.Is(err, leaseq.ErrNotFound):
				t.Fatalf("Get after the purge: %s, %v; want it gone", fmtState(row), err)
			case c.shows != nil && (err != nil || !c.shows(row)):
				t.Fatalf("row %s, %v after the call; want its effect", fmtState(row), err)
			}
		})
	}
}
