package leaseq_test

import (
	"testing"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/pgxlisten"
)

// testListener is the Listener of a queue of eng at where: on PostgreSQL a
// pgxlisten.Listener, closed when the test ends; none on SQLite, whose
// pools watch the file.
func testListener(t *testing.T, eng testEngine, where string) leaseq.Listener {
	t.Helper()
	if eng.name != "postgres" {
		return nil
	}
	l := pgxlisten.New(where)
	t.Cleanup(func() { l.Close() })
	return l
}
