package leaseq

import (
	"context"
	"fmt"

	"github.com/leaseq/leaseq/internal/engine"
)

// Stats and List are reads: they never take the write lock, and each is a
// few statements over the index leaseq_jobs_status, which covers them
// (stats.sql, list_all.sql, list_status.sql of each engine).

// Stats counts the queue's jobs by where they are, at one instant of the
// queue's clock. It is a read: it costs one pass over the index entries of
// the queue's pending and leased jobs, however many are done or
// quarantined, and takes no write lock.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	if err := q.callable(ctx); err != nil {
		return Stats{}, opError("stats", "", err)
	}
	r, err := q.e.QueueStats(ctx, engine.QueueStatsParams{Queue: q.name, Now: q.now()})
	if err != nil {
		return Stats{}, opError("stats", "", err)
	}
	pending, leased := r.Counts[string(StatusPending)], r.Counts[string(StatusLeased)]
	due, expired := r.Claimable[string(StatusPending)], r.Claimable[string(StatusLeased)]
	return Stats{Pending: due, Scheduled: pending - due, Leased: leased - expired, Expired: expired,
		Done: r.Counts[string(StatusDone)], Quarantined: r.Counts[string(StatusQuarantined)],
		OldestReady: nullTime(r.OldestReady), Paused: r.Counts["paused"] > 0}, nil
}

// List returns a page of the queue's jobs in enqueue order: those of
// f.Status (every status if ""), after the job f.AfterID (from the start if
// ""), at most f.Limit of them. To page, pass the last ID of a page as the
// next AfterID; a short page is the last. A page costs the same at any depth
// of the queue, and like [Queue.Stats] it is a read that takes no write
// lock. A Limit below 0 or over [MaxListLimit], or an unknown Status, is
// [ErrInvalid]; an AfterID not in the queue (never there, or purged since)
// is [ErrNotFound].
func (q *Queue) List(ctx context.Context, f Filter) ([]State, error) {
	if err := q.callable(ctx); err != nil {
		return nil, opError("list", "", err)
	}
	if err := problem(filterProblem(f)); err != nil {
		return nil, opError("list", "", err)
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	if f.AfterID != "" && nameProblem("AfterID", f.AfterID) != "" {
		return nil, opError("list", "", fmt.Errorf("AfterID %q: %w", f.AfterID, ErrNotFound)) // see storedNames
	}
	rows, err := q.e.JobList(ctx, engine.JobListParams{Queue: q.name, Status: string(f.Status), AfterID: f.AfterID, Limit: f.Limit,
		Kind: f.Kind})
	if err != nil {
		return nil, opError("list", "", err)
	}
	page := make([]State, len(rows))
	for i, r := range rows {
		page[i] = state(r)
	}
	return page, nil
}

// filterProblem validates a List filter.
func filterProblem(f Filter) string {
	switch f.Status {
	case "", StatusPending, StatusLeased, StatusDone, StatusQuarantined:
	default:
		return fmt.Sprintf("Status %q is not a status", f.Status)
	}
	if f.Limit < 0 || f.Limit > MaxListLimit {
		return fmt.Sprintf("Limit %d is outside 0..%d", f.Limit, MaxListLimit)
	}
	return kindProblem(f.Kind)
}
