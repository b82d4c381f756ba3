// Package leaseq is a lease queue with fencing tokens, stored in SQLite or
// in PostgreSQL.
//
// A worker claims a job and holds it for a lease. If the worker stalls past
// its lease, another worker may claim the job again. Every claim carries a
// new, monotonically increasing token, and [Queue.Finish] accepts a result
// only when the job ID, the owner, the token and the queue match the current
// row and both the lease and the job's deadline are still running. A worker
// that wakes up late is refused (false, nil), and the newer worker's row is
// left untouched:
//
//	0ms     A claims:   token=1, lease_until=1000
//	999ms   B claims:   nothing (A's lease is live)
//	1000ms  B claims:   token=2 (A's lease ended exactly now)
//	1001ms  A finishes with token=1 → false; the row still says owner=B, token=2
//	        B finishes with token=2 → true
//
// # Getting started
//
// [Open] a SQLite file, make a [Queue] with [New], enqueue, and run a pool
// of handlers with [Queue.Work]:
//
//	db, err := leaseq.Open("queue.db")
//	q, err := leaseq.New(ctx, db, leaseq.Options{})
//	err = q.Enqueue(ctx, leaseq.Job{ID: "order-7", Payload: body})
//	err = q.Work(ctx, leaseq.WorkerOptions{Owner: "orders@" + host, Concurrency: 8},
//		func(ctx context.Context, c leaseq.Claim) error { return deliver(ctx, c) })
//
// A handler's context ends with cause [ErrLeaseLost] the moment its lease
// is lost; what it returns decides the job: nil finishes it, an error
// retries it after [DefaultBackoff], [RetryAfter] after a delay of its own,
// [Snooze] puts it off without spending an attempt (a 429, a Retry-After;
// a job released at shutdown gets its attempt back the same way), and
// [Permanent] quarantines it. Receivers must be idempotent by job ID:
// the token fences the queue's rows, not what a stalled worker already sent.
//
// A pool also enqueues periodic jobs, one per slot across every process
// that lists them and no leader ([WorkerOptions.Periodic], [Every], any
// cron schedule), and purges done jobs after 24 hours and quarantined ones
// after 7 days by default ([WorkerOptions.Retention]; [Retention] Off keeps
// them).
//
// # The lifecycle
//
// A job may wait until a time ([Job.RunAt]) and go ahead of others
// ([Job.Priority]). A worker with its own loop claims with [Queue.Claim] or
// [Queue.ClaimBatch], renews a long lease with [Queue.Extend], gives a job
// back to be retried later with [Queue.Release], and quarantines one that
// retrying cannot fix with [Queue.Fail]; each is fenced exactly like
// Finish. An operator stops a job with [Queue.Cancel], brings a quarantined
// one back with [Queue.Requeue], deletes finished ones with [Queue.Purge],
// and looks with [Queue.Stats] and [Queue.List]. [Queue.EnqueueTx] enqueues
// inside the caller's own transaction. Queues of different names
// ([Options.Name]) share one database. Tools that only look use
// [Options.ReadOnly]; [Migrate] upgrades a schema as a step of its own.
//
// # Engines
//
// The queue lives in a SQLite database in rollback-journal mode (see [Open]
// and [New] for what that asks of the caller's own use of the file), or,
// when a service outgrows one machine, in PostgreSQL: New picks the engine
// from the *sql.DB it is given (modernc.org/sqlite, or any database/sql
// driver of PostgreSQL; the package imports none), and every call keeps the
// same rules on both. On SQLite the calls of a process take turns on the
// file's one writer and share commits (group commit); on PostgreSQL they
// run concurrently, claim with FOR UPDATE SKIP LOCKED, and read "now" from
// the server's clock unless a [Clock] is injected.
//
// All times come from an injectable [Clock] and are stored as integer Unix
// milliseconds; tests step a [ManualClock] onto lease boundaries instead of
// sleeping. The rules the queue keeps are numbered in docs/rules.md, and
// comments in the code cite them by number.
package leaseq
