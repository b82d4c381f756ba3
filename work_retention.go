package leaseq

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// A pool's retention (rule 55): at most once a minute by the queue's
// clock, a goroutine of the pool purges the done and quarantined jobs past
// their age, as Purge does, in chunks of a transaction each.

// Retention says how long Work keeps finished jobs before it purges them
// (see [Queue.Purge]): done jobs whose last change is older than Done,
// quarantined ones older than Quarantined. A zero field is its default
// (RetentionDoneDefault, RetentionQuarantinedDefault); Off keeps every job.
// Each pool purges at most once a minute, in chunks that never hold the
// writer for long.
type Retention struct {
	Done        time.Duration // 0: 24h
	Quarantined time.Duration // 0: 7 days
	Off         bool          // purge nothing
}

// Defaults of Retention, and how often a pool purges at most.
const (
	RetentionDoneDefault        = 24 * time.Hour
	RetentionQuarantinedDefault = 7 * 24 * time.Hour
	RetentionInterval           = time.Minute
)

// withDefaults fills the zero ages of r.
func (r Retention) withDefaults() Retention {
	r.Done = cmp.Or(r.Done, RetentionDoneDefault)
	r.Quarantined = cmp.Or(r.Quarantined, RetentionQuarantinedDefault)
	return r
}

// retentionProblem validates r as given.
func retentionProblem(r Retention) string {
	for _, d := range []struct {
		what string
		d    time.Duration
	}{{"Retention.Done", r.Done}, {"Retention.Quarantined", r.Quarantined}} {
		if d.d < 0 {
			return fmt.Sprintf("%s %v is negative", d.what, d.d)
		}
	}
	return ""
}

// retentionLoop purges the queue's old jobs until ctx ends.
func (p *pool) retentionLoop(ctx context.Context) {
	r := p.opts.Retention.withDefaults()
	if r.Off {
		return
	}
	var last time.Time // the last purge that ran to its end; zero: none yet
	p.timedLoop(ctx, "retention", func(now time.Time) (time.Duration, error) {
		if !last.IsZero() && now.Sub(last) < RetentionInterval && !now.Before(last) {
			return last.Add(RetentionInterval).Sub(now), nil
		}
		if err := p.retain(ctx, r, now); err != nil {
			return 0, err
		}
		last = now
		return RetentionInterval, nil
	})
}

// retain purges, at now, the done jobs older than r.Done and the
// quarantined ones older than r.Quarantined.
func (p *pool) retain(ctx context.Context, r Retention, now time.Time) error {
	for _, age := range []struct {
		status Status
		d      time.Duration
	}{{StatusDone, r.Done}, {StatusQuarantined, r.Quarantined}} {
		before := now.Add(-age.d)
		due, err := p.q.e.JobPurgeDue(ctx, engine.JobPurgeChunkParams{Queue: p.q.name, Status: string(age.status), Before: toMillis(before)})
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		if !due {
			continue
		}
		n, err := p.q.Purge(ctx, before, age.status)
		if n > 0 {
			p.log.Debug("leaseq: retention purged jobs", "queue", p.q.name, "owner", p.opts.Owner,
				"status", age.status, "purged", n)
		}
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
	}
	return nil
}
