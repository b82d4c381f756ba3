package leaseq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/leaseq/leaseq"
)

// One queue carries several kinds of work: each job says its kind, and a
// Mux sends it to the handler of that kind, its JSON payload decoded into
// the handler's own type. A kind nobody handles, or a payload that does
// not decode, fails the job for good with a reason that says so.
func ExampleMux() {
	dir, err := os.MkdirTemp("", "leaseq-mux-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := leaseq.Open(filepath.Join(dir, "queue.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	type Email struct {
		To      string `json:"to"`
		Subject string `json:"subject"`
	}
	m := leaseq.NewMux()
	leaseq.HandleJSON(m, "email.send", func(ctx context.Context, c leaseq.Claim, e Email) error {
		fmt.Printf("%s: mail %q to %s\n", c.ID, e.Subject, e.To)
		return nil
	})
	m.Handle("report.build", func(ctx context.Context, c leaseq.Claim) error {
		fmt.Printf("%s: building the report\n", c.ID)
		return nil
	})

	args, err := json.Marshal(Email{To: "ann@example.com", Subject: "Your order shipped"})
	if err != nil {
		panic(err)
	}
	err = q.EnqueueBatch(ctx, []leaseq.Job{
		{ID: "mail-1", Kind: "email.send", Payload: args},
		{ID: "report-1", Kind: "report.build"},
		{ID: "fax-1", Kind: "fax.send"},
		{ID: "mail-2", Kind: "email.send", Payload: []byte("not JSON")},
	})
	if err != nil {
		panic(err)
	}
	// One handler at a time, so that the handlers' lines come in order; the
	// pool stops once it has heard the four outcomes.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	results := map[string]string{}
	err = q.Work(wctx, leaseq.WorkerOptions{Owner: "worker-1", OnOutcome: func(o leaseq.Outcome) {
		mu.Lock()
		defer mu.Unlock()
		if results[o.Claim.ID] = o.Result; len(results) == 4 {
			stop()
		}
	}}, m.ServeJob)
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"mail-1", "report-1", "fax-1", "mail-2"} {
		fmt.Printf("%s: %s\n", id, results[id])
	}
	for _, id := range []string{"fax-1", "mail-2"} {
		st, err := q.Get(ctx, id)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s is %s: %s\n", id, st.Status, st.Reason)
	}
	// Output:
	// mail-1: mail "Your order shipped" to ann@example.com
	// report-1: building the report
	// mail-1: finished
	// report-1: finished
	// fax-1: failed
	// mail-2: failed
	// fax-1 is quarantined: no handler for kind "fax.send"
	// mail-2 is quarantined: kind "email.send": payload does not decode as leaseq_test.Email: invalid character 'o' in literal null (expecting 'u')
}
