package dashboard

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"

	"github.com/leaseq/leaseq"
)

// errNoQueue is the error for a queue name that has no jobs in the
// database (and is not the dashboard's own queue).
var errNoQueue = errors.New("no such queue")

// queueSet is every queue of the database the dashboard has opened: the
// one it was given, and one leaseq.Queue per other name found in the
// database, opened on first sight and kept, since opening one runs New's
// schema check (in a write transaction, unless the given queue is
// read-only: then the others are too). Only names that exist are opened, so
// a request cannot make it open queues at will.
type queueSet struct {
	home  *leaseq.Queue
	clock leaseq.Clock

	mu   sync.Mutex
	open map[string]*leaseq.Queue
}

func newQueueSet(home *leaseq.Queue, clock leaseq.Clock) *queueSet {
	return &queueSet{home: home, clock: clock, open: map[string]*leaseq.Queue{home.Name(): home}}
}

// db is the database every queue of the set is on.
func (s *queueSet) db() *sql.DB { return s.home.DB() }

// all returns every queue with jobs in the database, and the dashboard's
// own even when it has none, in name order.
func (s *queueSet) all(ctx context.Context) ([]*leaseq.Queue, error) {
	names, err := leaseq.Queues(ctx, s.db())
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, s.home.Name()) {
		names = append(names, s.home.Name())
		slices.Sort(names)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := make([]*leaseq.Queue, 0, len(names))
	for _, n := range names {
		q, err := s.openLocked(ctx, n)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// named returns the queue called name, or an error wrapping errNoQueue if
// the database has no job in it.
func (s *queueSet) named(ctx context.Context, name string) (*leaseq.Queue, error) {
	s.mu.Lock()
	q := s.open[name]
	s.mu.Unlock()
	if q != nil {
		return q, nil
	}
	qs, err := s.all(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if q.Name() == name {
			return q, nil
		}
	}
	return nil, errNoQueue
}

// openLocked returns the open queue called name, opening it if need be.
// s.mu is held.
func (s *queueSet) openLocked(ctx context.Context, name string) (*leaseq.Queue, error) {
	if q := s.open[name]; q != nil {
		return q, nil
	}
	q, err := leaseq.New(ctx, s.db(), leaseq.Options{Name: name, Clock: s.clock, ReadOnly: s.home.ReadOnly()})
	if err != nil {
		return nil, err
	}
	s.open[name] = q
	return q, nil
}
