package postgres

import (
	"embed"

	"github.com/leaseq/leaseq/internal/engine"
)

//go:embed sql/*.sql
var files embed.FS

// statements are the engine's SQL, one file of sql/ each, read at init so
// that a broken file stops the program before any call.
var statements = engine.MustStatements(files, "sql")

// stmt is the SQL of the statement name (its file's name without .sql). It
// panics on an unknown name: every name is a constant of this package, so
// a typo is a bug that the package's tests catch.
func stmt(name string) string {
	st, ok := statements[name]
	if !ok {
		panic("postgres: no statement " + name)
	}
	return st.SQL
}

// Statements returns the engine's parsed statements by name, for the root
// package's tests (the plan tests read their headers, and the claim
// statement runs as a subquery there).
func Statements() map[string]engine.Statement {
	out := make(map[string]engine.Statement, len(statements))
	for name, st := range statements {
		out[name] = st
	}
	return out
}
