package leaseq

import "github.com/leaseq/leaseq/internal/engine"

// Rule 56: a running pool hears of what other processes do. While it runs,
// its engine watches for their changes (SQLite: the file's change counter;
// PostgreSQL: Options.Listener's notifications) and wakes it as a local
// Enqueue would.

// watchStart starts the engine's watch for a pool; the function it returns
// ends it.
func (q *Queue) watchStart() (stop func()) {
	var l engine.Listener
	if q.listener != nil {
		l = q.listener
	}
	return q.e.WatchStart(engine.WatchParams{Listener: l})
}
