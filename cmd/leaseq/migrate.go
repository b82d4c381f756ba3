package main

import (
	"context"
	"fmt"
	"io"

	"github.com/leaseq/leaseq"
)

const migrateUsage = `usage: leaseq migrate [-db PATH|URL] [-json]

Creates leaseq's schema in the database if it has none, or upgrades one
written by an earlier release, in one transaction that keeps every job,
token and attempt count. It is the only command that changes a schema:
the others refuse a database of an older schema and name this command.
Upgrade only once every service on the database runs a release that knows
the new schema. A schema newer than this leaseq's is refused.

flags:
  -db PATH|URL          the database: a SQLite file, which must exist, or a
                        postgres:// or postgresql:// URL; default $LEASEQ_DB
  -json                 print JSON (the shape below) instead of text

JSON:
  {"from": 2, "to": 3}
  from is the version the database had: 0 for none, the same as to when
  there was nothing to do.
`

// migrateJSON is migrate's -json output.
type migrateJSON struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// runMigrate is "leaseq migrate".
func runMigrate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f, pos, err := parseCommand("migrate", args, nil)
	if err == nil {
		err = noArgs(pos)
	}
	if err == nil && f.queue != "" {
		err = usageError{"-queue does not apply: the schema is the whole database's"}
	}
	if err != nil {
		return err
	}
	db, err := openDB(ctx, f.db, true)
	if err != nil {
		return err
	}
	defer db.Close()
	from, to, err := leaseq.Migrate(ctx, db)
	if err != nil {
		return fmt.Errorf("database %s: %s", shown(f.db), reason(err))
	}
	out := migrateJSON{From: from, To: to}
	if f.json {
		return writeJSON(stdout, out)
	}
	switch from {
	case out.To:
		_, err = fmt.Fprintf(stdout, "schema version %d already; nothing to do\n", out.To)
	case 0:
		_, err = fmt.Fprintf(stdout, "created the schema, version %d\n", out.To)
	default:
		_, err = fmt.Fprintf(stdout, "upgraded the schema from version %d to %d\n", from, out.To)
	}
	return err
}
