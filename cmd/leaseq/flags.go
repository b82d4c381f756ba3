package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// dbFlags are the flags of every command that reads a database.
type dbFlags struct {
	db    string // -db: a SQLite path or a PostgreSQL URL; default $LEASEQ_DB
	queue string // -queue: one queue; "" means every queue
	json  bool   // -json: print the command's JSON shape instead of text
}

// define adds the flags to fs. The usage texts are written by hand in each
// command's usage, so fs prints none.
func (f *dbFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", os.Getenv("LEASEQ_DB"), "")
	fs.StringVar(&f.queue, "queue", "", "")
	fs.BoolVar(&f.json, "json", false, "")
}

// dbFlagsUsage documents dbFlags in every command's usage.
const dbFlagsUsage = `  -db PATH|URL          the database: a SQLite file, which must exist, or a
                        postgres:// or postgresql:// URL; default $LEASEQ_DB
  -queue NAME           only the queue NAME
  -json                 print JSON (the shape below) instead of text
`

// newFlagSet is a flag set that reports its errors to the caller instead of
// printing them or exiting.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args with fs and returns the other arguments. Flags may
// come after them too (leaseq requeue order-7 -json), so that a flag typed
// last is never taken for a job ID; "--" ends the flags, for IDs that start
// with "-". A bad flag is a usageError; -h is flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			return nil, err
		case err != nil:
			return nil, usageError{err.Error()}
		}
		rest := fs.Args()
		// Parse stops at the first argument that is not a flag, or after
		// "--", which it drops.
		consumed := len(args) - len(rest)
		if len(rest) == 0 || consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseCommand parses the flags of a database command: dbFlags and those
// define adds (define may be nil). It returns the other arguments.
func parseCommand(name string, args []string, define func(fs *flag.FlagSet)) (dbFlags, []string, error) {
	var f dbFlags
	fs := newFlagSet(name)
	f.define(fs)
	if define != nil {
		define(fs)
	}
	pos, err := parseFlags(fs, args)
	return f, pos, err
}

// noArgs refuses arguments a command does not take.
func noArgs(pos []string) error {
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	return nil
}
