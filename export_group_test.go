package leaseq

// WaitingCalls reports how many calls wait in the group-commit list, so that
// a test can make sure they have all queued up before it lets the committer
// take the lock.
func (q *Queue) WaitingCalls() int {
	g := &q.e.(*store).group
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, op := range g.waiting {
		if op.state == opWaiting {
			n++
		}
	}
	return n
}

// MaxGroupOps is maxGroupOps, for tests that fill a group.
const MaxGroupOps = maxGroupOps
