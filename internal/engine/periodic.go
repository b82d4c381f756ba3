package engine

// Periodic jobs (rule 53 in docs/rules.md): a slot's job is a job like any
// other, with the ID Name@<slot>; the unique (queue, id) admits one per
// slot, and leaseq_purged, which remembers the ID of every purged job
// (claimed or not: a slot's job cancelled before its first claim has token
// 0), keeps a purged slot from being enqueued again. No table of its own:
// whether a Periodic was seen before is read from its IDs.

// SlotInsertParams are SlotInsert's: the job of one slot, validated, with
// the queue's defaults filled in.
type SlotInsertParams struct {
	Queue Queue
	Job   JobRow
}

// SlotAnswer is what SlotInsert did.
type SlotAnswer int

const (
	// SlotWritten: the job is in the queue.
	SlotWritten SlotAnswer = iota + 1
	// SlotTaken: nothing written, as the queue has the ID or purged it.
	SlotTaken
	// SlotPaused: nothing written, as the queue is paused (rule 54): a
	// paused queue gathers no slots, which would all run at its Resume.
	SlotPaused
)

// SlotSeenParams are SlotSeen's. Prefix is a Periodic's "Name@", and
// always ends with '@'.
type SlotSeenParams struct {
	Queue  string
	Prefix string
}

// PrefixEnd is the least string greater than every string that starts
// with prefix, for a prefix ending with '@' (whose next byte is 'A'): the
// upper bound of a range of the unique index on (queue, id).
func PrefixEnd(prefix string) string {
	return prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
}
