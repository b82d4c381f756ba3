package main

import (
	"fmt"
	"os"

	"github.com/leaseq/leaseq/internal/postgres"
)

// pgSchema8Mode measures what PostgreSQL schema version 9 changed: Work(16)
// with a no-op handler on the current schema against the same on a
// database whose functions and triggers are version 8's (its script,
// ../internal/postgres/testdata/schema-v8.sql, run over the current one:
// every version's script replaces every function and trigger), the two in
// turn each round, 6,000 jobs each: rates, and the server's CPU per job of
// each round's pair and their difference.
func pgSchema8Mode() {
	s := server()
	k := n(6000)
	script, err := os.ReadFile("../internal/postgres/testdata/schema-v8.sql")
	check(err)
	var rates, cpus [2][]float64
	var diffs []float64
	for range *rounds {
		for v, old := range []bool{false, true} {
			q, _ := pgLeaseq("schema8", pgWorkConns)
			if old {
				for _, st := range postgres.SplitSQL(string(script)) {
					_, err := q.DB().Exec(st)
					check(err)
				}
			}
			fillLeaseq(q, k)
			cpu0 := s.serverCPU()
			r, _ := workFilled(q, 16, k, func() {})
			rates[v], cpus[v] = append(rates[v], r), append(cpus[v], (s.serverCPU()-cpu0)/float64(k)*1e6)
			closeLeaseq(q)
		}
		diffs = append(diffs, cpus[0][len(cpus[0])-1]-cpus[1][len(cpus[1])-1])
	}
	fmt.Printf("\n== pg-schema8: Work(16), %d jobs, the current schema against version 8's functions and triggers, in turn\n", k)
	fmt.Printf("  current: %.0f jobs/s, median %.0f; server CPU per job %.0f µs, median %.0f\n", rates[0], median(rates[0]), cpus[0], median(cpus[0]))
	fmt.Printf("  version 8: %.0f jobs/s, median %.0f; server CPU per job %.0f µs, median %.0f\n", rates[1], median(rates[1]), cpus[1], median(cpus[1]))
	fmt.Printf("  server CPU per job, current less version 8, each round: %.0f µs, median %.1f\n", diffs, median(diffs))
}
