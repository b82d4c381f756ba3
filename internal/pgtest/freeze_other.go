//go:build !linux

package pgtest

import "testing"

// Freeze stops the server's backends pids; only on Linux, elsewhere the
// test is skipped.
func Freeze(t testing.TB, pids ...int) (thaw func()) {
	t.Helper()
	t.Skip("pgtest: Freeze needs Linux")
	return func() {}
}
