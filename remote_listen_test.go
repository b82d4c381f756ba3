package leaseq_test

import (
	"testing"

	"github.com/leaseq/leaseq"
)

// testListener is the Listener of a queue of eng at where: none on SQLite,
// whose pools watch the file.
func testListener(t *testing.T, eng testEngine, where string) leaseq.Listener {
	return nil
}
