package leaseq_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/leaseq/leaseq"
)

func TestPGSmoke(t *testing.T) {
	ctx := context.Background()
	admin, err := sql.Open("pgx", "postgres://postgres@127.0.0.1:55432/postgres")
	if err != nil {
		t.Fatal(err)
	}
	admin.Exec("DROP DATABASE IF EXISTS smoke")
	if _, err := admin.Exec("CREATE DATABASE smoke"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", "postgres://postgres@127.0.0.1:55432/smoke")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clock := leaseq.NewManualClock(time.UnixMilli(1_000_000))
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, leaseq.Job{ID: "a", Qty: 2, Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, leaseq.Job{ID: "a"}); err == nil {
		t.Fatal("dup")
	} else {
		t.Log(err)
	}
	if err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "b", Priority: 5}, {ID: "c", RunAt: clock.Now().Add(time.Second)}, {ID: "d", Deadline: clock.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "e"}, {ID: "a"}}); err == nil {
		t.Fatal("dup batch")
	} else {
		t.Log(err)
	}
	c, ok, err := q.Claim(ctx, "w", time.Second)
	t.Log(c, ok, err)
	cs, err := q.ClaimBatch(ctx, "w", time.Second, 10)
	t.Log(cs, err)
	ok, err = q.Finish(ctx, c)
	t.Log("finish", ok, err)
	ok, err = q.Finish(ctx, c)
	t.Log("finish again", ok, err)
	c2, ok, err := q.Extend(ctx, cs[0], 5*time.Second)
	t.Log("extend", c2, ok, err)
	ok, err = q.Release(ctx, cs[1], time.Second, "later")
	t.Log("release", ok, err)
	oks, err := q.FinishBatch(ctx, []leaseq.Claim{c2, c})
	t.Log("finishbatch", oks, err)
	st, err := q.Stats(ctx)
	t.Logf("stats %+v %v", st, err)
	l, err := q.List(ctx, leaseq.Filter{})
	for _, s := range l {
		t.Logf("%+v", s)
	}
	t.Log(err)
	t.Log(q.Cancel(ctx, "c", "stop"), q.Cancel(ctx, "zz", "x"), q.Cancel(ctx, "c", "x"), q.Requeue(ctx, "c"))
	n, err := q.Purge(ctx, clock.Now().Add(time.Hour), leaseq.StatusDone)
	t.Log("purge", n, err)
	q2, err := leaseq.New(ctx, db, leaseq.Options{Name: "srv"})
	if err != nil {
		t.Fatal(err)
	}
	q2.Enqueue(ctx, leaseq.Job{ID: "s1", Deadline: time.Now().Add(time.Hour)})
	c, ok, err = q2.Claim(ctx, "w", time.Second)
	t.Log(c, ok, err, time.Now())
	tx, _ := db.BeginTx(ctx, nil)
	t.Log("tx", q.EnqueueTx(ctx, tx, leaseq.Job{ID: "t1"}, leaseq.Job{ID: "a"}), q.EnqueueTx(ctx, tx, leaseq.Job{ID: "t2"}), tx.Commit())
	g, err := q.Get(ctx, "t2")
	t.Log(g, err)
}
