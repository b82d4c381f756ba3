package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq"
)

// The orders and pg-orders modes (rules 43–47): a service that places
// orders, one row of its own and one job each, beside a pool that holds
// its jobs for long.
//
//	orders     SQLite. 128 goroutines place orders for -orders-for each (5 ms
//	           apart) beside Work(16) running 6-second handlers on a
//	           2-second lease: through InTx (the row and the job in the
//	           queue's writer turn), through plain Enqueue (the job alone),
//	           and through BeginTx + INSERT + EnqueueTx + Commit, in turn.
//	           Each reports orders/s, errors (busy errors among them), the
//	           p99 of one order, and the leases the pool lost (its
//	           warnings). Then Work(16) over 20,000 jobs with a no-op
//	           handler against handlers that record one row with
//	           FinishTx, and the time from EnqueueTx's Commit to the
//	           handler's start in an idle pool.
//	pg-orders  the same on PostgreSQL (pools of 80 connections, under the
//	           default max_connections of 100).

var ordersFor = flag.Duration("orders-for", 10*time.Second, "how long each orders variant places orders")

// orderWay is one way of placing an order: the row and its job.
type orderWay struct {
	name  string
	place func(ctx context.Context, q *leaseq.Queue, id string) error
}

// orderWays are the three ways the orders modes compare; insert is the
// engine's INSERT of an order row.
func orderWays(insert string) []orderWay {
	return []orderWay{
		{"InTx (row + job)", func(ctx context.Context, q *leaseq.Queue, id string) error {
			return q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error {
				if _, err := tx.ExecContext(ctx, insert, id, 1); err != nil {
					return err
				}
				return tx.Enqueue(ctx, leaseq.Job{ID: id})
			})
		}},
		{"Enqueue (job alone)", func(ctx context.Context, q *leaseq.Queue, id string) error {
			return q.Enqueue(ctx, leaseq.Job{ID: id})
		}},
		{"BeginTx + EnqueueTx (row + job)", func(ctx context.Context, q *leaseq.Queue, id string) error {
			tx, err := q.DB().BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, insert, id, 1); err != nil {
				return err
			}
			if err := q.EnqueueTx(ctx, tx, leaseq.Job{ID: id}); err != nil {
				return err
			}
			return tx.Commit()
		}},
	}
}

// orderRun is what one variant did.
type orderRun struct {
	rate         float64
	errs, busy   int64
	p99          time.Duration
	lost         int64
	firstErr     string
	ordersPlaced int
}

// warnCounter counts a pool's records at Warn and above (its lost leases
// and refused results).
type warnCounter struct{ n atomic.Int64 }

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnCounter) Handle(context.Context, slog.Record) error    { w.n.Add(1); return nil }
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnCounter) WithGroup(string) slog.Handler                { return w }

// placeOrders runs way on q for d with g goroutines beside Work(16) of
// 6-second handlers on a 2-second lease.
func placeOrders(q *leaseq.Queue, way orderWay, g int, d time.Duration) orderRun {
	warns := &warnCounter{}
	stop := slowPool(q, warns)
	var r orderRun
	var mu sync.Mutex
	var lat []time.Duration
	var placed atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := placeUntil(q, way, w, end, &placed, func(err error) {
				mu.Lock()
				defer mu.Unlock()
				r.tally(err)
			})
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	slices.Sort(lat)
	r.rate = float64(placed.Load()) / elapsed.Seconds()
	r.p99 = lat[len(lat)*99/100]
	r.lost = warns.n.Load()
	return r
}

// tally counts one failed order.
func (r *orderRun) tally(err error) {
	r.errs++
	if s := err.Error(); strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "database is locked") {
		r.busy++
	}
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
}

// placeUntil is one goroutine placing orders way until end, 5 ms apart,
// each with 10 s to go through: it counts the placed ones, hands failed
// ones to failed, and returns how long each took.
func placeUntil(q *leaseq.Queue, way orderWay, w int, end time.Time, placed *atomic.Int64, failed func(error)) []time.Duration {
	var lat []time.Duration
	for i := 0; time.Now().Before(end); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t := time.Now()
		err := way.place(ctx, q, fmt.Sprintf("o-%d-%d", w, i))
		cancel()
		lat = append(lat, time.Since(t))
		if err != nil {
			failed(err)
		} else {
			placed.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return lat
}

// slowPool starts Work(16) on q whose handlers take 6 seconds on a
// 2-second lease, logging to warns; the function it returns stops it.
func slowPool(q *leaseq.Queue, warns *warnCounter) func() {
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: 16, Lease: 2 * time.Second,
			DrainTimeout: 100 * time.Millisecond, Logger: slog.New(warns)},
			func(ctx context.Context, c leaseq.Claim) error {
				select {
				case <-time.After(6 * time.Second):
					return nil
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			})
	}()
	return func() { cancel(); check(<-returned) }
}

// finishTxRate is workRateOn with handlers that each record one row with
// FinishTx (insert, the engine's) and return nil.
func finishTxRate(q *leaseq.Queue, insert string, g, k int) (rate float64, cpuPerJob time.Duration) {
	ensureOrders(q)
	fillLeaseq(q, k)
	var done atomic.Int64
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cpu0 := cpuTime()
	start := time.Now()
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: g, Logger: quiet},
			func(ctx context.Context, c leaseq.Claim) error {
				ok, err := q.FinishTx(ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
					_, err := tx.ExecContext(ctx, insert, c.ID, c.Token)
					return err
				})
				if err != nil || !ok {
					fatalf("FinishTx of %s: %v %v", c.ID, ok, err)
				}
				if done.Add(1) == int64(k) {
					close(all)
				}
				return nil
			})
	}()
	<-all
	cancel()
	check(<-returned)
	return float64(k) / time.Since(start).Seconds(), (cpuTime() - cpu0) / time.Duration(k)
}

// enqueueTxWake commits k jobs one at a time with BeginTx + EnqueueTx +
// Commit into an idle pool and returns the p50 and p99 of the time from
// the Commit's return to the handler's start.
func enqueueTxWake(q *leaseq.Queue, k int) (p50, p99 time.Duration) {
	started := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: 16, Logger: quiet},
			func(context.Context, leaseq.Claim) error { started <- time.Now(); return nil })
	}()
	var lat []time.Duration
	for _, j := range jobs(k) {
		tx, err := q.DB().BeginTx(ctx, nil)
		check(err)
		check(q.EnqueueTx(ctx, tx, j))
		check(tx.Commit())
		committed := time.Now()
		lat = append(lat, (<-started).Sub(committed))
		time.Sleep(2 * time.Millisecond) // the pool goes idle again
	}
	cancel()
	check(<-returned)
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// ensureOrders makes the orders table the modes insert into.
func ensureOrders(q *leaseq.Queue) {
	_, err := q.DB().Exec(`CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, n BIGINT NOT NULL)`)
	check(err)
}

// ordersOn runs the orders comparison on queues made by mk.
func ordersOn(title string, mk func(what string) (*leaseq.Queue, func()), insert string) {
	fmt.Printf("\n== %s: 128 goroutines placing orders for %v each way beside Work(16), 6 s handlers, 2 s lease\n", title, *ordersFor)
	rates := map[string][]float64{}
	ways := orderWays(insert)
	for r := 1; r <= *rounds; r++ {
		fmt.Printf("round %d:\n", r)
		for _, way := range ways {
			q, done := mk("orders")
			ensureOrders(q)
			res := placeOrders(q, way, 128, *ordersFor)
			done()
			rates[way.name] = append(rates[way.name], res.rate)
			fmt.Printf("  %-34s %9.1f orders/s  errors %d (busy %d)  p99 %v  warnings (lost leases) %d\n",
				way.name, res.rate, res.errs, res.busy, res.p99.Round(time.Millisecond), res.lost)
			if res.firstErr != "" {
				fmt.Printf("    first error: %s\n", res.firstErr)
			}
		}
	}
	in, en, tx := median(rates[ways[0].name]), median(rates[ways[1].name]), median(rates[ways[2].name])
	fmt.Printf("medians: InTx %.1f, Enqueue %.1f, BeginTx+EnqueueTx %.1f orders/s\n", in, en, tx)
	fmt.Printf("  ratio InTx / Enqueue            %6.2f   (target >= 0.7)\n", in/en)
	fmt.Printf("  ratio InTx / BeginTx+EnqueueTx  %6.2f   (target >= 10 on SQLite, >= 1 on PostgreSQL)\n", in/tx)

	finishTxOn(title, mk, insert)

	q, done := mk("wakeenqueuetx")
	p50, p99 := enqueueTxWake(q, n(200))
	done()
	fmt.Printf("\n== %s: EnqueueTx's Commit -> handler start, idle pool of 16, %d jobs: p50 %v, p99 %v (target p50 <= 5ms)\n",
		title, n(200), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
}

// finishTxOn compares, side by side in each round, Work(16) with a no-op
// handler and Work(16) whose handlers record their job with FinishTx
// writing one row, on queues made by mk, with the CPU per job of each.
func finishTxOn(title string, mk func(what string) (*leaseq.Queue, func()), insert string) {
	fmt.Printf("\n== %s: Work(16) over 20,000 jobs, no-op handler vs FinishTx writing one row\n", title)
	var noop, ftx, noopCPU, ftxCPU []float64
	for r := 1; r <= *rounds; r++ {
		q, done := mk("worknoop")
		v, vc := workRateOn(q, 16, n(20000))
		done()
		q, done = mk("workfinishtx")
		w, wc := finishTxRate(q, insert, 16, n(20000))
		done()
		noop, ftx = append(noop, v), append(ftx, w)
		noopCPU, ftxCPU = append(noopCPU, us(vc)), append(ftxCPU, us(wc))
		fmt.Printf("round %d: no-op %.1f jobs/s (%.1f µs CPU/job), FinishTx %.1f jobs/s (%.1f µs CPU/job), ratio %.2f (target >= 0.7)\n",
			r, v, us(vc), w, us(wc), w/v)
	}
	fmt.Printf("medians: no-op %.1f, FinishTx %.1f jobs/s, ratio %.2f; CPU/job %.1f vs %.1f µs\n",
		median(noop), median(ftx), median(ftx)/median(noop), median(noopCPU), median(ftxCPU))
}

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// sqliteQueues makes the SQLite queues of the orders and finishtx modes.
func sqliteQueues() func(what string) (*leaseq.Queue, func()) {
	k := 0
	return func(what string) (*leaseq.Queue, func()) {
		k++
		q := newLeaseq(fmt.Sprintf("%s-%d.db", what, k), "FULL", leaseq.Options{})
		return q, func() { check(q.Close()); check(q.DB().Close()) }
	}
}

// pgQueues makes the PostgreSQL queues of the pg-orders and pg-finishtx modes.
func pgQueues(what string) (*leaseq.Queue, func()) {
	q, _ := pgLeaseq(what, 80)
	return q, func() { closeLeaseq(q) }
}

const (
	sqliteOrderInsert = `INSERT INTO orders (id, n) VALUES (?, ?)`
	pgOrderInsert     = `INSERT INTO orders (id, n) VALUES ($1, $2)`
)

func ordersMode()     { ordersOn("orders (SQLite)", sqliteQueues(), sqliteOrderInsert) }
func pgOrdersMode()   { ordersOn("pg-orders (PostgreSQL)", pgQueues, pgOrderInsert) }
func finishTxMode()   { finishTxOn("finishtx (SQLite)", sqliteQueues(), sqliteOrderInsert) }
func pgFinishTxMode() { finishTxOn("pg-finishtx (PostgreSQL)", pgQueues, pgOrderInsert) }
