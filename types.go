package leaseq

import "time"

// Status is where a job is in its life.
type Status string

// The states of a job. A job moves pending → leased → done, or to
// quarantined when it can no longer be finished, fails, or is cancelled; a
// leased job whose lease ran out is claimable again, a released one is
// pending again, and [Queue.Requeue] moves a quarantined one back to pending.
const (
	StatusPending     Status = "pending"
	StatusLeased      Status = "leased"
	StatusDone        Status = "done"
	StatusQuarantined Status = "quarantined"
)

// Job is a unit of work to enqueue with [Queue.Enqueue], [Queue.EnqueueBatch]
// or [Queue.EnqueueTx].
type Job struct {
	// ID names the business job (an order). It is unique in its queue, at
	// most MaxIDLen bytes of UTF-8 without NUL; receivers de-duplicate on it.
	ID string
	// Qty is the job's quantity, carried to the worker; never negative. Any
	// other int is stored exactly on both engines (a 64-bit column).
	Qty int
	// Payload is opaque to the queue, stored byte for byte, at most
	// Options.MaxPayload bytes.
	Payload []byte
	// Deadline is when the job stops being worth doing. The zero value means
	// no deadline. No lease runs past it, and no Finish is accepted at or
	// after it. It must be no later than the last millisecond of year 9999:
	// a far-future "never" such as time.Unix(math.MaxInt64, 0) is
	// ErrInvalid, saying to use a zero Deadline for no deadline, rather
	// than wrapped to an instant the queue would misread.
	Deadline time.Time
	// MaxAttempts is how many claims the job gets before it is quarantined;
	// 0 means the queue's default (Options.MaxAttempts). At most MaxCount.
	MaxAttempts int
	// RunAt is when the job becomes claimable; the zero value (or any
	// instant not after now) means at once. It must be before Deadline,
	// and like it within years 1 to 9999.
	RunAt time.Time
	// Priority orders claimable jobs: a Claim never takes a job while a
	// claimable job of higher priority waits in the same queue. From
	// MinPriority to MaxPriority; 0 is the default.
	Priority int
	// Kind says what sort of work the job is, for a [Mux] to route it by
	// (rule 50): "" for none, else a name of at most MaxKindLen bytes of
	// UTF-8 without NUL.
	Kind string
}

// MaxKindLen is the longest Job.Kind, in bytes.
const MaxKindLen = 64

// The range of Job.Priority.
const (
	MinPriority = -100
	MaxPriority = 100
)

// Claim is a worker's proof of one lease generation of a job, as
// [Queue.Claim] returns it. Pass it back unchanged to [Queue.Finish],
// [Queue.Extend], [Queue.Release] or [Queue.Fail] of the same queue: each
// compares its Queue, ID, Owner and Token with the current row.
type Claim struct {
	// ID, Qty and Payload are the job's, as enqueued.
	ID      string
	Qty     int
	Payload []byte
	// Queue is the name of the queue the job was claimed from. A fenced
	// call on a Queue of another name refuses the claim (false, nil): the
	// same ID, owner and token can exist in two queues. "" is taken as the
	// queue the call is made on, so that a Claim built by hand, or kept
	// from a version of leaseq before this field, is still fenced by its
	// ID, owner and token alone.
	Queue string
	// Owner is the worker name given to Claim. It is for people reading
	// logs: a restarted worker has the same name, so it never suffices to
	// finish a job on its own.
	Owner string
	// Token is the fencing token: the job's lease generation, one more than
	// the last claim's: 1 for a job's first claim, unless the job was
	// enqueued again under a purged ID, whose tokens it continues (see
	// Queue.Purge). A token is a sequence number, not a credential: it
	// grants nothing and authenticates nobody.
	Token int64
	// Attempt counts the claims of this job, this one included, since it
	// was enqueued or last requeued.
	Attempt int
	// LeaseUntil is when the lease ends: min(now+lease, Deadline). At that
	// instant the lease is already over. Queue.Extend returns the claim
	// with its new LeaseUntil.
	LeaseUntil time.Time
	// Deadline is the job's deadline; zero means none.
	Deadline time.Time
	// Priority is the job's priority.
	Priority int
	// Kind is the job's kind, as enqueued ("": none).
	Kind string
	// EnqueuedAt is when the job was enqueued (or enqueued again after a
	// purge of its ID).
	EnqueuedAt time.Time
	// RunAt is the job's Job.RunAt, or when the delay of its last Release
	// ended; zero: none. The job has been claimable since the later of
	// EnqueuedAt and RunAt, unless an earlier lease of it ran out since.
	RunAt time.Time
	// MaxAttempts is the job's: the claim whose Attempt reaches it is the
	// last, and a Release of it quarantines the job.
	MaxAttempts int
}

// State is a snapshot of one job's row, as [Queue.Get] and [Queue.List]
// return it.
type State struct {
	ID          string
	Queue       string
	Qty         int
	Payload     []byte
	Status      Status
	Owner       string // the last owner to claim it; empty before the first claim
	Token       int64  // the last claim's token; 0 before the first claim (unless continuing a purged job's)
	Attempts    int    // how many times it was claimed (since the last Requeue)
	MaxAttempts int
	LeaseUntil  time.Time // when the last lease ended or ends; zero before the first claim
	Deadline    time.Time // zero: no deadline
	RunAt       time.Time // Job.RunAt, or when a Release's delay ends; zero: none
	Priority    int
	// Reason is the text of the last Release, Fail or Cancel, or why the
	// job was quarantined.
	Reason     string
	EnqueuedAt time.Time
	UpdatedAt  time.Time // the last change to the row
	Kind       string    // Job.Kind; "": none
}

// Stats counts one queue's jobs by where they are, as [Queue.Stats] returns
// it. It is a snapshot taken at one instant of the queue's clock.
type Stats struct {
	Pending     int // pending and due (run_at <= now); ended leases are counted in Expired
	Scheduled   int // pending, run_at in the future
	Leased      int // live leases
	Expired     int // leases that ended, not claimed again yet
	Done        int
	Quarantined int
	// OldestReady is since when the longest-waiting claimable job has been
	// claimable: max(enqueue time, run_at) for a pending job, lease_until
	// for an ended lease; zero if nothing is claimable.
	OldestReady time.Time
	// Paused reports that the queue is paused ([Queue.Pause]): no process
	// claims from it until [Queue.Resume].
	Paused bool
}

// Filter selects a page of [Queue.List].
type Filter struct {
	Status  Status // "": every status
	AfterID string // "": from the start; else the page after this job, in enqueue order
	Limit   int    // 0: DefaultListLimit; at most MaxListLimit
	Kind    string // "": every kind; else only the jobs of this Job.Kind
}

// Page sizes of [Queue.List].
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// Result is what [Queue.Process] did.
type Result struct {
	// Claim is the claim Process made; zero when Claimed is false.
	Claim Claim
	// Claimed reports whether a job was claimed (and send called).
	Claimed bool
	// Finished reports whether send returned nil and Finish accepted the
	// result. Claimed && !Finished with a nil error means the lease ended
	// (or the deadline passed) while send ran: another worker may already
	// hold the job, so the result was refused.
	Finished bool
}
