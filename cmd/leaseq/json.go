package main

import (
	"time"

	"github.com/leaseq/leaseq"
)

// The JSON shapes of -json, one per command, as each command's usage
// documents them. Times are RFC 3339 in UTC, null when the job has none;
// keys are always present.

// statsJSON is stats -json.
type statsJSON struct {
	Queues []queueStatsJSON `json:"queues"`
}

type queueStatsJSON struct {
	Queue       string     `json:"queue"`
	Pending     int        `json:"pending"`
	Scheduled   int        `json:"scheduled"`
	Leased      int        `json:"leased"`
	Expired     int        `json:"expired"`
	Done        int        `json:"done"`
	Quarantined int        `json:"quarantined"`
	OldestReady *time.Time `json:"oldest_ready"`
	Paused      bool       `json:"paused"`
}

// jobJSON is a job in list -json; show -json adds its payload.
type jobJSON struct {
	Queue       string     `json:"queue"`
	ID          string     `json:"id"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Qty         int        `json:"qty"`
	Priority    int        `json:"priority"`
	Owner       string     `json:"owner"`
	Token       int64      `json:"token"`
	Attempts    int        `json:"attempts"`
	MaxAttempts int        `json:"max_attempts"`
	EnqueuedAt  time.Time  `json:"enqueued_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	RunAt       *time.Time `json:"run_at"`
	LeaseUntil  *time.Time `json:"lease_until"`
	Deadline    *time.Time `json:"deadline"`
	Reason      string     `json:"reason"`
}

// showJSON is show -json: the job with its payload, base64 (null if empty).
type showJSON struct {
	jobJSON
	Payload []byte `json:"payload"`
}

// listJSON is list -json. more names each queue whose page was full, with
// the -after that continues it.
type listJSON struct {
	Jobs []jobJSON  `json:"jobs"`
	More []moreJSON `json:"more"`
}

type moreJSON struct {
	Queue string `json:"queue"`
	After string `json:"after"`
}

// resultsJSON is requeue -json and cancel -json: one result per ID, in
// the order given.
type resultsJSON struct {
	Results []resultJSON `json:"results"`
}

type resultJSON struct {
	ID    string `json:"id"`
	Queue string `json:"queue"` // "" when no queue has the job
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// purgeJSON is purge -json.
type purgeJSON struct {
	Before    time.Time         `json:"before"`
	OlderThan string            `json:"older_than"`
	Statuses  []leaseq.Status   `json:"statuses"`
	Purged    int               `json:"purged"`
	Queues    []queuePurgedJSON `json:"queues"`
}

type queuePurgedJSON struct {
	Queue  string `json:"queue"`
	Purged int    `json:"purged"`
	Error  string `json:"error,omitempty"`
}

// toJobJSON is st as list -json shows it.
func toJobJSON(st leaseq.State) jobJSON {
	return jobJSON{
		Queue: st.Queue, ID: st.ID, Kind: st.Kind, Status: string(st.Status), Qty: st.Qty, Priority: st.Priority,
		Owner: st.Owner, Token: st.Token, Attempts: st.Attempts, MaxAttempts: st.MaxAttempts,
		EnqueuedAt: st.EnqueuedAt.UTC(), UpdatedAt: st.UpdatedAt.UTC(),
		RunAt: instant(st.RunAt), LeaseUntil: instant(st.LeaseUntil), Deadline: instant(st.Deadline),
		Reason: st.Reason,
	}
}

// instant is t for JSON: null for the zero time, which means "none".
func instant(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
