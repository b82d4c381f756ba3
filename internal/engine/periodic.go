package engine

// Periodic jobs (rule 53 in docs/rules.md): a slot's job is a job like any
// other, with the ID Name@<slot>; the unique (queue, id) admits one per
// slot, and leaseq_purged, which remembers the IDs of purged jobs that were
// claimed, keeps a purged slot from being enqueued again. No table of its
// own: whether a Periodic was seen before is read from its IDs.

// SlotInsertParams are SlotInsert's: the job of one slot, validated, with
// the queue's defaults filled in.
type SlotInsertParams struct {
	Queue Queue
	Job   JobRow
}

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
