package leaseq_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Effects exactly once inside the database (rule 46 in docs/rules.md):
// pool processes record each delivery with FinishTx into an effects table
// while the test kills them (SIGKILL) and stops them (SIGSTOP) at random,
// so that leases end under handlers that go on and other processes take
// their jobs. At the end every job is done, and has exactly one effect,
// written by the token and owner that finished it. LEASEQ_FINISHTX_CHAOS
// sets how long the chaos lasts (a Go duration; 8s by default), for soaks.

// TestChildFinishTxPool is one pool process of TestFinishTxEffectsUnderKill:
// Work whose handlers sometimes stall past their lease, ignoring their
// context, then record the delivery with FinishTx.
func TestChildFinishTxPool(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "finishtx-pool" {
		return
	}
	driver := "sqlite"
	if os.Getenv("LEASEQ_ENGINE") == postgresEngine.name {
		driver = "pgx"
	}
	db, err := sql.Open(driver, os.Getenv("LEASEQ_DB"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	owner := os.Getenv("LEASEQ_OWNER")
	err = q.Work(ctx, leaseq.WorkerOptions{Owner: owner, Concurrency: 4, Lease: 300 * time.Millisecond,
		Heartbeat: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond},
		func(ctx context.Context, c leaseq.Claim) error {
			// A stall that ignores ctx, often past the lease: before
			// FinishTx (its fence then refuses before fn), or inside fn
			// after its write (the Finish after fn refuses; on SQLite
			// every writer of the process waits meanwhile).
			stall := func() { time.Sleep(time.Duration(rand.IntN(700)) * time.Millisecond) }
			where := rand.IntN(8)
			if where < 2 {
				stall()
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			ok, err := q.FinishTx(rctx, c, func(ctx context.Context, tx leaseq.Tx) error {
				_, err := tx.ExecContext(ctx, rebindFor(driver, `INSERT INTO effects (job, token, owner) VALUES (?1, ?2, ?3)`),
					c.ID, c.Token, c.Owner)
				if where == 2 {
					stall()
				}
				return err
			})
			if err == nil && !ok {
				// Refused: nothing of fn was kept, and the job is not done
				// by this handler; a nil here would have Work finish it.
				return leaseq.ErrLeaseLost
			}
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
}

// rebindFor is the engine's rebind, by driver name.
func rebindFor(driver, query string) string {
	if driver == "pgx" {
		return postgresEngine.rebind(query)
	}
	return query
}

func TestFinishTxEffectsUnderKill(t *testing.T) {
	forEnginesInTurn(t, testFinishTxEffectsUnderKill)
}

func testFinishTxEffectsUnderKill(t *testing.T, e testEngine) {
	chaos := 8 * time.Second
	if s := os.Getenv("LEASEQ_FINISHTX_CHAOS"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		chaos = d
	}
	path := e.fresh(t)
	db := e.open(t, path)
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := db.Exec(`CREATE TABLE effects (job TEXT NOT NULL, token BIGINT NOT NULL, owner TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	dsn := path
	if e.name == sqliteEngine.name {
		dsn = "file:" + path + "?_pragma=busy_timeout(5000)&_txlock=immediate"
	}
	pools := make([]*exec.Cmd, 3)
	start := func(i int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildFinishTxPool$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LEASEQ_CHILD=finishtx-pool", "LEASEQ_ENGINE="+e.name, "LEASEQ_DB="+dsn,
			fmt.Sprintf("LEASEQ_OWNER=pool%d", i))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pools[i] = cmd
	}
	for i := range pools {
		start(i)
	}
	defer func() {
		for _, p := range pools {
			p.Process.Signal(syscall.SIGCONT)
			p.Process.Kill()
			p.Wait()
		}
	}()
	// Jobs arrive all through the chaos, so that it always meets work, and
	// no faster than the pools take them: at most 200 wait.
	enqueued := make(chan int)
	go func() {
		n := 0
		for end := time.Now().Add(chaos); time.Now().Before(end); n++ {
			if st, err := q.Stats(ctx); err == nil && st.Pending > 200 {
				time.Sleep(20 * time.Millisecond)
				n--
				continue
			}
			if err := q.Enqueue(ctx, leaseq.Job{ID: fmt.Sprintf("j%06d", n), MaxAttempts: 1000}); err != nil {
				t.Error(err)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		enqueued <- n
	}()
	kills, stops := 0, 0
	for end := time.Now().Add(chaos); time.Now().Before(end); {
		time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond)
		i := rand.IntN(len(pools))
		if rand.IntN(2) == 0 {
			pools[i].Process.Kill()
			pools[i].Wait()
			start(i)
			kills++
			continue
		}
		pools[i].Process.Signal(syscall.SIGSTOP)
		time.Sleep(time.Duration(200+rand.IntN(600)) * time.Millisecond) // past the lease
		pools[i].Process.Signal(syscall.SIGCONT)
		stops++
	}
	n := <-enqueued
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs enqueued, %d done when the chaos ended; %d kills, %d stops", n, st.Done, kills, stops)
	waitUntil(t, 2*time.Minute, "every job to be done", func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Done == n
	})
	checkEffects(t, db, q, n)
}

// checkEffects fails t unless each of the n jobs has exactly one effect,
// written by the claim that finished it, and no effect names another job.
func checkEffects(t *testing.T, db *sql.DB, q *leaseq.Queue, n int) {
	t.Helper()
	rows, err := db.Query(`SELECT job, token, owner FROM effects ORDER BY job, token`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	effects := map[string][]string{}
	for rows.Next() {
		var job, owner string
		var token int64
		if err := rows.Scan(&job, &token, &owner); err != nil {
			t.Fatal(err)
		}
		effects[job] = append(effects[job], fmt.Sprintf("%s/%d", owner, token))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var bad []string
	for i := range n {
		id := fmt.Sprintf("j%06d", i)
		s := mustGet(t, q, id)
		want := fmt.Sprintf("%s/%d", s.Owner, s.Token)
		if s.Status != leaseq.StatusDone || len(effects[id]) != 1 || effects[id][0] != want {
			bad = append(bad, fmt.Sprintf("%s: %s by %s, effects %v", id, s.Status, want, effects[id]))
		}
		delete(effects, id)
	}
	for id, es := range effects {
		bad = append(bad, fmt.Sprintf("effects of a job that is not in the queue: %s %v", id, es))
	}
	if len(bad) > 0 {
		t.Fatalf("%d violations:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}
