package engine

// QueuePauseParams are QueuePause's (rule 54): Paused true pauses the
// queue, false resumes it; either is idempotent.
type QueuePauseParams struct {
	Queue  Queue
	Paused bool
}
