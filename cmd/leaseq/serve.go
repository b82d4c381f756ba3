package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

const serveUsage = `usage: leaseq serve [-db PATH|URL] [-queue NAME] [-addr HOST:PORT] [-writes]

Serves the dashboard of every queue in the database over HTTP until
interrupted: counts per status and queue, throughput and depth over the last
hour, lists per status, each job's full state. Read-only unless -writes is
given. It prints the URL it serves on once it listens.

The dashboard has no login: anyone who can reach the address can use it, so
keep it on loopback (the default) or behind a proxy that authenticates.

flags:
  -addr HOST:PORT       where to listen (default 127.0.0.1:8080: this host
                        only; port 0 picks a free one)
  -writes               show the Requeue and Cancel buttons, and accept them
  -db PATH|URL          the database: a SQLite file, which must exist, or a
                        postgres:// or postgresql:// URL; default $LEASEQ_DB
  -queue NAME           the queue listed even while it has no jobs (default:
                        none; "default" only when the database holds no
                        queue at all)
`

// serveHome is the queue the dashboard is given, which it lists even while
// it is empty: the one -queue names, else the first the database holds, so
// that no queue is shown that is not there; "default" only on a database
// that holds none, where the page needs one.
func serveHome(ctx context.Context, s *session) (*leaseq.Queue, error) {
	names, err := s.names(ctx)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		names = []string{leaseq.DefaultName}
	}
	return s.queue(ctx, names[0])
}

// runServe serves the dashboard until ctx ends, then shuts the server down
// and returns nil.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var addr string
	var writes bool
	f, pos, err := parseCommand("serve", args, func(fs *flag.FlagSet) {
		fs.StringVar(&addr, "addr", "127.0.0.1:8080", "")
		fs.BoolVar(&writes, "writes", false, "")
	})
	if err == nil {
		err = noArgs(pos)
	}
	if err != nil {
		return err
	}
	s, err := openSession(ctx, f)
	if err != nil {
		return err
	}
	defer s.Close()
	q, err := serveHome(ctx, s)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv := &http.Server{
		Handler:           dashboard.New(q, dashboard.Options{AllowWrites: writes, Logger: log, Clock: s.clock}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	mode := "read-only"
	if writes {
		mode = "writes allowed"
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		fmt.Fprintf(stderr, "leaseq serve: warning: listening on %s, beyond loopback; the dashboard has no login\n", ln.Addr())
	}
	fmt.Fprintf(stdout, "leaseq serve: dashboard of %s (%s) on http://%s/\n", redacted(f.db), mode, ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
