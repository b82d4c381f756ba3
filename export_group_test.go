package leaseq

// WaitingCalls reports how many calls wait in the group-commit list, so that
// a test can make sure they have all queued up before it lets the committer
// take the lock.
func (q *Queue) WaitingCalls() int {
	if q.group == nil {
		return 0
	}
	q.group.mu.Lock()
	defer q.group.mu.Unlock()
	n := 0
	for _, op := range q.group.waiting {
		if op.state == opWaiting {
			n++
		}
	}
	return n
}

// MaxGroupOps is maxGroupOps, for tests that fill a group.
const MaxGroupOps = maxGroupOps
