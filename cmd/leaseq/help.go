package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

const helpUsage = `usage: leaseq help [COMMAND]

Shows the commands, or the usage of COMMAND: its flags and the shape of
its JSON output. "leaseq COMMAND -h" shows the same.
`

// runHelp is "leaseq help [COMMAND]".
func runHelp(_ context.Context, args []string, stdout, _ io.Writer) error {
	pos, err := parseFlags(newFlagSet("help"), args)
	switch {
	case err != nil:
		return err
	case len(pos) == 0:
		_, err = io.WriteString(stdout, mainUsage())
		return err
	case len(pos) > 1:
		return usageError{fmt.Sprintf("unexpected argument %q", pos[1])}
	}
	cmd := lookup(pos[0])
	if cmd == nil {
		return usageError{fmt.Sprintf("unknown command %q", pos[0])}
	}
	_, err = io.WriteString(stdout, cmd.usage)
	return err
}

// mainUsage is "leaseq help": the commands and what they share.
func mainUsage() string {
	var b strings.Builder
	b.WriteString(`usage: leaseq COMMAND [flags] [ARGS]

leaseq looks at and repairs the queues of a leaseq database: a SQLite
file or a PostgreSQL database.

commands:
`)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-16s %s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
	b.WriteString(`
The commands that read a database take -db PATH|URL (default $LEASEQ_DB),
-queue NAME (default: every queue), and -json for the output scripts read.
Flags may come before or after the arguments; "--" ends them (for an ID
that starts with "-"). Run "leaseq help COMMAND" for a command's flags and
its JSON. stats, list, show and serve without -writes open the database
read-only. Only migrate creates or upgrades a schema: on one older or newer
than this leaseq's, every other command exits 1 and says so.

exit status: 0 success, 1 failure, 2 usage error. Failures are reported
on stderr, naming the job and the reason.

environment:
  LEASEQ_DB    the database, when -db is not given
  LEASEQ_NOW   an RFC 3339 instant, such as 2025-01-01T00:00:00Z, that the
               commands take as now: the queues decide at that instant and
               times are shown relative to it. For tests and scripts that
               need output that does not change from one run to the next.
`)
	return b.String()
}
