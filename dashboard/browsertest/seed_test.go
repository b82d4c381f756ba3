package browsertest

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/leaseq/leaseq"
)

// seedStart is the instant the seeded hour starts; the seeded database's
// "now" is an hour and a half minute later.
var seedStart = time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC)

// scriptID is a job ID made of markup, seeded quarantined in "mail".
const scriptID = `<script>alert(1)</script>`

// seed fills the database at path with an hour of work in two queues, on a
// manual clock, through the public API only: each minute orders are
// enqueued in "default" at a rate that swings around what its workers
// take (22 a minute), with a burst in the second half hour that more
// workers then drain, and a few of those claimed fail into quarantine; "mail" runs a steady
// trickle. It ends with jobs in every state: pending, scheduled, leased,
// expired leases, done and quarantined, one of them the markup ID. It
// returns the clock's final instant.
func seed(ctx context.Context, path string) (time.Time, error) {
	db, err := leaseq.Open(path)
	if err != nil {
		return time.Time{}, err
	}
	defer db.Close()
	clock := leaseq.NewManualClock(seedStart)
	orders, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		return time.Time{}, err
	}
	defer orders.Close()
	mail, err := leaseq.New(ctx, db, leaseq.Options{Name: "mail", Clock: clock})
	if err != nil {
		return time.Time{}, err
	}
	defer mail.Close()
	n := 0
	for m := range 60 {
		clock.Set(seedStart.Add(time.Duration(m)*time.Minute + 5*time.Second))
		enqueue := 18 + int(8*math.Sin(float64(m)/7))
		if m >= 34 && m < 40 {
			enqueue += 45 // a burst the workers take a while to drain
		}
		var jobs []leaseq.Job
		for range enqueue {
			n++
			jobs = append(jobs, leaseq.Job{ID: fmt.Sprintf("order-%d", 10000+n), Qty: 1 + n%4,
				Payload: fmt.Appendf(nil, `{"order": %d, "sku": "SKU-%03d", "qty": %d}`, 10000+n, n%250, 1+n%4)})
		}
		if err := orders.EnqueueBatch(ctx, jobs); err != nil {
			return time.Time{}, err
		}
		fails := 0
		if m%7 == 3 || (m >= 36 && m < 42) {
			fails = 1 + m%2
		}
		workers := 22
		if m >= 41 {
			workers = 32 // more workers, started to drain the backlog
		}
		if err := work(ctx, orders, clock, workers, fails, "payments-api answered 503 Service Unavailable three times; giving up"); err != nil {
			return time.Time{}, err
		}
		mails := []leaseq.Job{{ID: fmt.Sprintf("mail-%d-a", m), Payload: []byte("to: ops@example.com")},
			{ID: fmt.Sprintf("mail-%d-b", m), Payload: []byte("to: billing@example.com")}}
		if err := mail.EnqueueBatch(ctx, mails); err != nil {
			return time.Time{}, err
		}
		if err := work(ctx, mail, clock, 2, 0, ""); err != nil {
			return time.Time{}, err
		}
	}
	return seedTail(ctx, orders, mail, clock)
}

// work claims up to claims jobs of q, fails the first fails of them with
// reason and finishes the rest.
func work(ctx context.Context, q *leaseq.Queue, clock *leaseq.ManualClock, claims, fails int, reason string) error {
	clock.Advance(20 * time.Second)
	cs, err := q.ClaimBatch(ctx, "worker-"+q.Name(), time.Minute, claims)
	if err != nil {
		return err
	}
	for i, c := range cs {
		if i >= fails {
			if _, err := q.FinishBatch(ctx, cs[i:]); err != nil {
				return err
			}
			break
		}
		if _, err := q.Fail(ctx, c, reason); err != nil {
			return err
		}
	}
	return nil
}

// seedTail leaves the last states: live and expired leases, a scheduled
// job, a binary payload and the markup ID in quarantine.
func seedTail(ctx context.Context, orders, mail *leaseq.Queue, clock *leaseq.ManualClock) (time.Time, error) {
	clock.Set(seedStart.Add(59*time.Minute + 40*time.Second))
	if _, err := orders.ClaimBatch(ctx, "worker-slow", 2*time.Second, 3); err != nil { // expired by now
		return time.Time{}, err
	}
	if _, err := orders.ClaimBatch(ctx, "worker-default", 5*time.Minute, 6); err != nil {
		return time.Time{}, err
	}
	err := mail.EnqueueBatch(ctx, []leaseq.Job{
		{ID: scriptID, Payload: []byte(`<img src=x onerror=alert(2)>`)},
		{ID: "mail-digest", RunAt: clock.Now().Add(time.Hour), Payload: []byte("weekly digest")},
		{ID: "mail-attachment", Payload: []byte{0x25, 0x50, 0x44, 0x46, 0x2d, 0x31, 0x2e, 0x37, 0x0a, 0x00, 0xe2, 0xe3, 0xcf, 0xd3}},
	})
	if err != nil {
		return time.Time{}, err
	}
	c, ok, err := mail.Claim(ctx, "worker-mail", time.Minute)
	if err != nil || !ok || c.ID != scriptID {
		return time.Time{}, fmt.Errorf("claim of the markup job: %v %v %q", ok, err, c.ID)
	}
	if _, err := mail.Fail(ctx, c, `template error near "<b>{{.Name}}</b>": no such field`); err != nil {
		return time.Time{}, err
	}
	clock.Set(seedStart.Add(60*time.Minute + 30*time.Second))
	return clock.Now(), nil
}
