package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/leaseq/leaseq"
)

// usageError is the caller's mistake: the command's usage is printed after
// it and the exit status is 2, where a failure exits 1.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// jobError is a failure about one job, reported as
//
//	leaseq: cancel "order-7": job is done; only a pending or leased job can be cancelled
type jobError struct {
	id  string
	err error
}

func (e jobError) Error() string { return fmt.Sprintf("%q: %s", e.id, reason(e.err)) }

// errReported is returned by a command that has written its failures to
// stderr already (one line per job that failed); it exits 1.
var errReported = errors.New("failures reported")

// report writes a failure of command cmd to stderr: the command, the job if
// it is about one, and the reason.
func report(stderr io.Writer, cmd string, err error) {
	var je jobError
	if errors.As(err, &je) {
		fmt.Fprintf(stderr, "leaseq: %s %s\n", cmd, je)
		return
	}
	fmt.Fprintf(stderr, "leaseq: %s: %s\n", cmd, reason(err))
}

// reason is an error's text as an operator reads it. An error of the
// library reads `leaseq: OP "ID": REASON: invalid argument`; the command and
// the job are said once by report, and the trailing sentinel, there for
// errors.Is, adds nothing for a reader, so only REASON is kept.
func reason(err error) string {
	if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), "leaseq: ") {
		err = inner
	}
	return strings.TrimSuffix(err.Error(), ": "+leaseq.ErrInvalid.Error())
}
