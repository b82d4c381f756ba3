package leaseq

import "time"

// SetWriteConnIdle sets writeConnIdle for one test and returns the function
// that restores it.
func SetWriteConnIdle(d time.Duration) (restore func()) {
	old := writeConnIdle
	writeConnIdle = d
	return func() { writeConnIdle = old }
}
