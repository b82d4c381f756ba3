package sqlite

import "time"

// pollInterval is how often pollFile reads the change counter.
const pollInterval = 10 * time.Millisecond

// pollFile reads the counter every pollInterval until stop closes and
// wakes the waiting pools when it moved by more than this engine's own
// commits. A counter it could not read
// (the file gone or not written yet) is looked for again at the next tick;
// once it is read again the pools are woken, as a change may have been
// missed.
func (e *Engine) pollFile(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var f fileCounter
	defer f.close()
	last, known, first := uint32(0), false, true
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		c, err := f.read(e.file)
		switch {
		case err != nil:
			known = false
		case !known && first, known && !e.watch.foreign(&last, c):
		default:
			e.wake.Remote("")
		}
		if err == nil {
			last, known, first = c, true, false
		}
	}
}
