package engine

// QueuePauseParams are QueuePause's (rule 54): Paused true pauses the
// queue, false resumes it; either is idempotent.
type QueuePauseParams struct {
	Queue  Queue
	Paused bool
}

// LeasedRow is one job leased to an owner: its ID and its claim's token
// (JobsLeased).
type LeasedRow struct {
	ID    string
	Token int64
}
