// Command leaseq is the operator's tool for leaseq queues: it shows how deep
// they are, what is stuck and why, puts quarantined jobs back, stops jobs,
// purges finished ones and serves the dashboard, on a SQLite file or a
// PostgreSQL database. Its demo plays the lease timeline of the README.
//
//	leaseq stats   -db jobs.db
//	leaseq list    -db jobs.db -status quarantined
//	leaseq show    -db jobs.db order-7
//	leaseq requeue -db jobs.db order-7 order-9
//	leaseq purge   -db jobs.db -older-than 168h
//	leaseq migrate -db jobs.db
//	leaseq demo
//
// Run "leaseq help" for the commands and "leaseq help COMMAND" for one
// command's flags and JSON output. Exit status: 0 success, 1 failure,
// 2 usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand. run gets the arguments after the command's
// name; it returns a usageError for the caller's mistakes, flag.ErrHelp
// after -h, and any other error for a failure.
type command struct {
	name    string
	args    string // the synopsis after the name, for the command list
	summary string // one line for the command list
	usage   string // the full text of "leaseq help NAME"
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is the command table, in the order "leaseq help" lists them.
// It is filled in init because help's entry refers to the table.
var commands []*command

func init() {
	commands = []*command{
		{"stats", "", "count each queue's jobs by status", statsUsage, runStats},
		{"list", "", "list jobs, a page at a time", listUsage, runList},
		{"show", "ID", "show one job in full", showUsage, runShow},
		{"requeue", "ID...", "move quarantined jobs back to pending", requeueUsage, runRequeue},
		{"cancel", "ID...", "quarantine pending or leased jobs", cancelUsage, runCancel},
		{"purge", "", "delete done or quarantined jobs older than a duration", purgeUsage, runPurge},
		{"pause", "", "stop every worker from claiming a queue's jobs", pauseUsage, runPause},
		{"resume", "", "let a paused queue's jobs be claimed again", resumeUsage, runResume},
		{"serve", "", "serve the dashboard over HTTP", serveUsage, runServe},
		{"migrate", "", "create or upgrade the database's schema", migrateUsage, runMigrate},
		{"demo", "", "play the lease timeline on a temporary database", demoUsage, runDemo},
		{"help", "[COMMAND]", "show the commands, or one command's usage", helpUsage, runHelp},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program minus the process: it runs the command args
// names and returns the exit status, having written any error to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return usageFailed(stderr, usageError{"no command given"}, mainUsage())
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name = "help"
	}
	cmd := lookup(name)
	if cmd == nil {
		return usageFailed(stderr, usageError{fmt.Sprintf("unknown command %q", name)}, mainUsage())
	}
	err := cmd.run(ctx, args[1:], stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		io.WriteString(stdout, cmd.usage)
		return 0
	case errors.As(err, &ue):
		return usageFailed(stderr, usageError{cmd.name + ": " + ue.msg}, cmd.usage)
	case errors.Is(err, errReported):
		return 1
	default:
		report(stderr, cmd.name, err)
		return 1
	}
}

// usageFailed reports a usage error followed by the usage it broke, and
// returns exit status 2.
func usageFailed(stderr io.Writer, err usageError, usage string) int {
	fmt.Fprintf(stderr, "leaseq: %s\n\n%s", err.msg, usage)
	return 2
}

// lookup finds the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}
