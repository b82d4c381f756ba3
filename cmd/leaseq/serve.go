package main

// This file is the "serve" command, a placeholder until the dashboard
// package is built; it is then replaced whole. main.go's command table
// refers to the two names it must define:
//
//	const serveUsage = `usage: leaseq serve ...`  // the text of "leaseq help serve"
//	func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error
//
// runServe gets the arguments after "serve". It returns a usageError for a
// caller's mistake (exit 2, "leaseq: serve: MSG" and the usage on stderr),
// flag.ErrHelp after -h (the usage on stdout, exit 0), nil after a clean
// shutdown once ctx ends (on SIGINT or SIGTERM), and any other error for a
// failure (exit 1, "leaseq: serve: REASON"). To build it:
// parseCommand("serve", args, define) parses -db, -queue, -json and the
// flags define adds; openSession(ctx, flags) opens the database (refusing a
// path that does not exist); session.queue(ctx, name) opens the queue to
// pass to dashboard.New; session.Close closes them all.

import (
	"context"
	"flag"
	"io"
)

const serveUsage = `usage: leaseq serve [-db PATH|URL] [-queue NAME] [-addr HOST:PORT] [-writes]

Serves the dashboard over HTTP until interrupted: counts per status and
queue, throughput and depth over the last hour, lists per status, each
job's full state. Read-only unless -writes is given.

flags:
  -addr HOST:PORT       where to listen (default 127.0.0.1:8080: this host
                        only)
  -writes               show the Requeue and Cancel buttons, and accept them
  -db PATH|URL          the database: a SQLite file, which must exist, or a
                        postgres:// or postgresql:// URL; default $LEASEQ_DB
  -queue NAME           the queue the dashboard opens on (default "default")
`

// runServe is "leaseq serve"; see the top of this file.
func runServe(_ context.Context, args []string, _, _ io.Writer) error {
	_, _, err := parseCommand("serve", args, func(fs *flag.FlagSet) {
		fs.String("addr", "127.0.0.1:8080", "")
		fs.Bool("writes", false, "")
	})
	if err != nil {
		return err
	}
	return usageError{"not built yet"}
}
