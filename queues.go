package leaseq

import (
	"context"
	"database/sql"
	"slices"
)

// queuesSQL finds the queue names by skipping through an index that starts
// with the queue: each step asks for the least name after the last one,
// which is one probe of the index, so listing k queues costs k probes
// however many jobs each holds. A DISTINCT or GROUP BY would read every
// job. It has no placeholders, so the same text runs on every engine.
const queuesSQL = `WITH RECURSIVE q(name) AS (
    SELECT min(queue) FROM leaseq_jobs
    UNION ALL
    SELECT (SELECT min(queue) FROM leaseq_jobs WHERE queue > q.name) FROM q WHERE q.name IS NOT NULL)
SELECT name FROM q WHERE name IS NOT NULL`

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
	names := []string{}
	err := retryBusy(ctx, func() error {
		names = names[:0]
		rows, err := db.QueryContext(ctx, queuesSQL)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return err
			}
			names = append(names, name)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, opError("queues", "", err)
	}
	// The recursion visits names in the engine's collation order, which need
	// not be byte order; callers get one order on every engine.
	slices.Sort(names)
	return names, nil
}
