package leaseq

import (
	"context"
	"database/sql"
	"slices"
)

// Queues returns the names of the queues that have jobs in db (in any
// status), sorted byte by byte; none is an empty slice. A queue whose last job was purged is no
// longer among them. It is a read that costs one index probe per queue,
// for tools that look at every queue of a database, such as an operator's
// overview; db must hold leaseq's schema (see [New]).
func Queues(ctx context.Context, db *sql.DB) ([]string, error) {
	if err := ctxProblem(ctx); err != nil {
		return nil, opError("queues", "", err)
	}
	if db == nil {
		return nil, opError("queues", "", invalid("db is nil"))
	}
	e, err := openEngine(ctx, db)
	if err != nil {
		return nil, opError("queues", "", err)
	}
	defer e.Release()
	names, err := e.QueueNames(ctx)
	if err != nil {
		return nil, opError("queues", "", err)
	}
	if names == nil {
		names = []string{}
	}
	// The recursion visits names in the engine's collation order, which need
	// not be byte order; callers get one order on every engine.
	slices.Sort(names)
	return names, nil
}
