package sqlite

import "testing"

// TestWatcherForeign: a move of the change counter wakes the pools only
// when it holds a commit that is not among the engine's own, also when
// the counter wraps.
func TestWatcherForeign(t *testing.T) {
	for _, c := range []struct {
		own        []uint32
		last, to   uint32
		wantWake   bool
		wantReason string
	}{
		{nil, 4, 4, false, "no move"},
		{nil, 4, 5, true, "another's commit"},
		{[]uint32{5}, 4, 5, false, "the engine's own commit"},
		{[]uint32{5, 6}, 4, 6, false, "two of its own"},
		{[]uint32{5}, 4, 6, true, "its own and another's"},
		{[]uint32{6}, 4, 6, true, "another's, then its own"},
		{[]uint32{3, 4}, 4, 5, true, "own commits from before the last look do not count"},
		{[]uint32{0}, 0xffffffff, 0, false, "its own, across the wrap"},
		{[]uint32{0}, 0xffffffff, 1, true, "its own and another's, across the wrap"},
	} {
		w := &watcher{own: c.own}
		last := c.last
		if got := w.foreign(&last, c.to); got != c.wantWake || last != c.to {
			t.Errorf("%s: own %v, %d -> %d: wake %v, last %d; want %v, %d", c.wantReason, c.own, c.last, c.to, got, last, c.wantWake, c.to)
		}
	}
}
