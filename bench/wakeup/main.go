// Command wakeup measures rule 56 with two OS processes: the time from an
// Enqueue in one process to its handler starting in another's idle pool,
// the time from a Cancel in one process to ErrLeaseLost in the other's
// handler, and an idle pool's CPU (getrusage) over a span. Run it from the
// bench module: go run ./wakeup -engine sqlite (or -engine postgres -pg URL).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/pgxlisten"
)

var (
	eng    = flag.String("engine", "sqlite", "sqlite or postgres")
	where  = flag.String("db", "", "the database: a file (default: a new temporary one) or a postgres:// URL")
	n      = flag.Int("n", 200, "jobs (and cancels) measured")
	gap    = flag.Duration("gap", 20*time.Millisecond, "time between two enqueues")
	idle   = flag.Duration("idle", 10*time.Second, "span over which the idle pool's CPU is measured")
	listen = flag.Bool("listen", true, "PostgreSQL: give the pool a pgxlisten.Listener")
	cancel = flag.Bool("cancel", true, "measure Cancel -> ErrLeaseLost too (without wake-ups it waits for a heartbeat: 20 minutes)")
	tput   = flag.Duration("throughput", 0, "instead: Enqueue from 8 goroutines for this long and print jobs/s")
	qname  = flag.String("queue", "", "the queue's name (default: one of this run's own)")
	role   = flag.String("role", "", "internal: the child's role")
)

func main() {
	flag.Parse()
	if *qname == "" {
		*qname = fmt.Sprintf("run%d", os.Getpid())
	}
	if *eng == "sqlite" && *where == "" {
		*where = filepath.Join(os.TempDir(), fmt.Sprintf("wakeup-%d.db", os.Getpid()))
		defer os.Remove(*where)
	}
	q, l := open()
	defer q.Close()
	if l != nil {
		defer l.Close()
	}
	switch {
	case *tput > 0:
		throughput(q)
		return
	}
	switch *role {
	case "enqueue":
		enqueuer(q)
	case "cancel":
		canceller(q)
	default:
		measure(q)
	}
}

func open() (*leaseq.Queue, *pgxlisten.Listener) {
	ctx := context.Background()
	if *eng == "sqlite" {
		db, err := leaseq.Open(*where)
		check(err)
		q, err := leaseq.New(ctx, db, leaseq.Options{Name: *qname})
		check(err)
		return q, nil
	}
	db := stdlib.OpenDB(*mustConfig(*where))
	var l *pgxlisten.Listener
	opts := leaseq.Options{Name: *qname}
	if *listen && *role == "" {
		l = pgxlisten.New(*where)
		opts.Listener = l
	}
	q, err := leaseq.New(ctx, db, opts)
	check(err)
	return q, l
}

// enqueuer enqueues n jobs, gap apart, each with its enqueue time in its
// payload.
func enqueuer(q *leaseq.Queue) {
	for i := range *n {
		time.Sleep(*gap)
		now := strconv.FormatInt(time.Now().UnixNano(), 10)
		check(q.Enqueue(context.Background(), leaseq.Job{ID: fmt.Sprintf("j%d", i), Payload: []byte(now)}))
	}
}

// canceller cancels the jobs c0 … as they become leased, writing each
// Cancel's time to stdout.
func canceller(q *leaseq.Queue) {
	ctx := context.Background()
	for i := range *n {
		id := fmt.Sprintf("c%d", i)
		for {
			s, err := q.Get(ctx, id)
			if err == nil && s.Status == leaseq.StatusLeased {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(*gap)
		fmt.Println(time.Now().UnixNano())
		check(q.Cancel(ctx, id, "bench"))
	}
}

// throughput enqueues one job per call from 8 goroutines for -throughput.
func throughput(q *leaseq.Queue) {
	var total atomic.Int64
	end := time.Now().Add(*tput)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				check(q.Enqueue(context.Background(), leaseq.Job{ID: fmt.Sprintf("t%d-%d", g, i)}))
				total.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("%s Enqueue throughput, 8 goroutines: %.0f jobs/s\n", *eng, float64(total.Load())/tput.Seconds())
}

func measure(q *leaseq.Queue) {
	ctx, stop := context.WithCancel(context.Background())
	lat := make(chan time.Duration, *n)
	lost := make(chan int64, *n)
	go q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: 4, Lease: time.Hour},
		func(hctx context.Context, c leaseq.Claim) error {
			if c.ID[0] == 'c' {
				<-hctx.Done()
				lost <- time.Now().UnixNano()
				if !errors.Is(context.Cause(hctx), leaseq.ErrLeaseLost) {
					log.Fatalf("cause %v", context.Cause(hctx))
				}
				return nil
			}
			at, _ := strconv.ParseInt(string(c.Payload), 10, 64)
			lat <- time.Since(time.Unix(0, at))
			return nil
		})
	time.Sleep(time.Second)
	cpu0, io0, t0 := cpu(), procIO(), time.Now()
	time.Sleep(*idle)
	used, span, io1 := cpu()-cpu0, time.Since(t0), procIO()
	fmt.Printf("%s idle pool: %v CPU over %v = %.2f%% of a core; %d write syscalls, %d bytes written to storage\n", *eng, used,
		span.Round(time.Millisecond), 100*float64(used)/float64(span), io1["syscw"]-io0["syscw"], io1["write_bytes"]-io0["write_bytes"])

	child := func(r string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], append(os.Args[1:], "-role="+r, "-db="+*where, "-queue="+*qname)...)
		cmd.Stderr = os.Stderr
		return cmd
	}
	check(child("enqueue").Run())
	var ds []time.Duration
	for range *n {
		ds = append(ds, <-lat)
	}
	report("enqueue -> handler start", ds)
	if !*cancel {
		stop()
		return
	}

	for i := range *n {
		check(q.Enqueue(context.Background(), leaseq.Job{ID: fmt.Sprintf("c%d", i)}))
	}
	cmd := child("cancel")
	out, err := cmd.Output()
	check(err)
	var cancels []int64
	for _, f := range splitLines(string(out)) {
		v, _ := strconv.ParseInt(f, 10, 64)
		cancels = append(cancels, v)
	}
	ds = ds[:0]
	for i := range *n {
		ds = append(ds, time.Duration(<-lost-cancels[i]))
	}
	report("Cancel -> ErrLeaseLost", ds)
	stop()
}

func report(what string, ds []time.Duration) {
	slices.Sort(ds)
	p := func(f float64) time.Duration {
		return ds[min(len(ds)-1, int(f*float64(len(ds))))].Round(10 * time.Microsecond)
	}
	fmt.Printf("%s %s across processes, %d samples: p50 %v, p99 %v, max %v\n", *eng, what, len(ds), p(0.5), p(0.99), ds[len(ds)-1].Round(10*time.Microsecond))
}

func cpu() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procIO is this process's /proc/self/io counters (Linux).
func procIO() map[string]int64 {
	b, _ := os.ReadFile("/proc/self/io")
	m := map[string]int64{}
	for _, l := range splitLines(string(b)) {
		var k string
		var v int64
		if _, err := fmt.Sscanf(l, "%s %d", &k, &v); err == nil {
			m[k[:len(k)-1]] = v
		}
	}
	return m
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, s[:i])
		}
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
