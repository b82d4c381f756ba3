package dashboard

import (
	"context"
	"database/sql"
)

// TODO(merge): remove this file once the root package has
// leaseq.Queues(ctx, db) (queues.go), and call that instead.

// queuesSQL lists the distinct queue names in order, one index seek of the
// unique (queue, id) index per name, however many jobs each queue holds.
const queuesSQL = `WITH RECURSIVE q(name) AS (
    SELECT min(queue) FROM leaseq_jobs
    UNION ALL
    SELECT (SELECT min(queue) FROM leaseq_jobs WHERE queue > q.name) FROM q WHERE q.name IS NOT NULL)
SELECT name FROM q WHERE name IS NOT NULL`

// listQueues returns the names of the queues that have jobs in db, in order.
func listQueues(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, queuesSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
