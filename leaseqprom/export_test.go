package leaseqprom

import (
	"testing"
	"time"
)

// SetScrapeTimeout sets the timeout of the collector's reads for the
// duration of t.
func SetScrapeTimeout(t testing.TB, d time.Duration) {
	old := scrapeTimeout
	scrapeTimeout = d
	t.Cleanup(func() { scrapeTimeout = old })
}
