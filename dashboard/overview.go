package dashboard

import (
	"context"
	"net/http"
	"time"

	"github.com/leaseq/leaseq"
)

// hour is how far back the overview's charts reach: this minute and the 59
// before it.
const hour = 59 * time.Minute

// overviewPage is the overview: every queue's counts and the last hour.
type overviewPage struct {
	Now     time.Time
	Queues  []queueCounts
	Total   leaseq.Stats
	Many    bool // more than one queue, so a total row helps
	Hour    hourView
	Refresh int64 // milliseconds between refreshes; 0: none
}

// queueCounts is one queue's row of the overview.
type queueCounts struct {
	Name string
	leaseq.Stats
}

func (overviewPage) title() string { return "Overview" }

func (d *dashboard) overview(w http.ResponseWriter, r *http.Request) {
	p, err := d.overviewData(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "overview", p)
}

// live is the overview's changing part alone, which the page's script
// fetches to refresh itself without a reload.
func (d *dashboard) live(w http.ResponseWriter, r *http.Request) {
	p, err := d.overviewData(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.write(w, r, http.StatusOK, pages["overview"], "live", p)
}

// overviewData reads every queue's Stats and last hour: per queue, one
// Stats and one Activity, each a read over indexes (rule 35 in docs/rules.md).
func (d *dashboard) overviewData(ctx context.Context) (overviewPage, error) {
	qs, err := d.queues.all(ctx)
	if err != nil {
		return overviewPage{}, err
	}
	now := d.now()
	p := overviewPage{Now: now, Many: len(qs) > 1}
	if d.opts.Refresh > 0 {
		p.Refresh = d.opts.Refresh.Milliseconds()
	}
	var minutes [][]leaseq.Minute
	for _, q := range qs {
		st, err := q.Stats(ctx)
		if err != nil {
			return overviewPage{}, err
		}
		p.Queues = append(p.Queues, queueCounts{Name: q.Name(), Stats: st})
		p.Total = addStats(p.Total, st)
		ms, err := q.Activity(ctx, now.Add(-hour))
		if err != nil {
			return overviewPage{}, err
		}
		minutes = append(minutes, ms)
	}
	p.Hour = newHourView(sumMinutes(minutes))
	return p, nil
}

// addStats adds b's counts to a's; OldestReady is the earlier of the two.
func addStats(a, b leaseq.Stats) leaseq.Stats {
	a.Pending += b.Pending
	a.Scheduled += b.Scheduled
	a.Leased += b.Leased
	a.Expired += b.Expired
	a.Done += b.Done
	a.Quarantined += b.Quarantined
	if !b.OldestReady.IsZero() && (a.OldestReady.IsZero() || b.OldestReady.Before(a.OldestReady)) {
		a.OldestReady = b.OldestReady
	}
	return a
}
