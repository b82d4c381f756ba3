package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/leaseq/leaseq"
	"github.com/robfig/cron/v3"
)

// A pool lists its periodic jobs; every pool that lists one enqueues each
// slot's job and the queue's unique IDs admit one, so there is no leader
// to elect. A cron schedule (github.com/robfig/cron/v3) is a
// leaseq.Schedule; here one with a seconds field, every second. The
// handler snoozes the job once, as it would on a 429 with Retry-After: the
// job comes back without spending an attempt.
func ExamplePeriodic() {
	dir, err := os.MkdirTemp("", "leaseq-periodic-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := leaseq.Open(filepath.Join(dir, "queue.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	everySecond, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).
		Parse("* * * * * *")
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var id string
	err = q.Work(ctx, leaseq.WorkerOptions{
		Owner:    "reporter",
		Periodic: []leaseq.Periodic{{Name: "report", Schedule: everySecond}},
	}, func(ctx context.Context, c leaseq.Claim) error {
		fmt.Printf("%s attempt %d\n", strings.Split(c.ID, "@")[0], c.Attempt)
		if c.Attempt == 1 {
			return leaseq.Snooze(0) // say, the report service answered 429
		}
		id = c.ID
		stop()
		return nil
	})
	fmt.Println("Work returned:", err)
	s, err := q.Get(context.Background(), id)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s, attempts %d of %d\n", s.Status, s.Attempts, s.MaxAttempts)
	// Output:
	// report attempt 1
	// report attempt 2
	// Work returned: <nil>
	// done, attempts 2 of 4
}
