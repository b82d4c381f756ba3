package postgres

import (
	"embed"

	"github.com/leaseq/leaseq/internal/engine"
)

//go:embed sql/*.sql
var files embed.FS

// statements are the engine's SQL, one file of sql/ each, read at init so
// that a broken file stops the program before any call.
var statements = engine.MustSQL("postgres", files, "sql")

// stmt is the SQL of the statement name (its file's name without .sql); an
// unknown name panics (engine.SQL.Stmt).
func stmt(name string) string { return statements.Stmt(name) }

// Statements returns the engine's parsed statements by name, for the root
// package's tests (the plan tests read their headers, and the claim
// statement runs as a subquery there).
func Statements() map[string]engine.Statement { return statements.All() }
