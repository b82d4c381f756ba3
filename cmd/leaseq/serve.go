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
	"strings"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

const serveUsage = `usage: leaseq serve [-db PATH|URL] [-queue NAME] [-addr HOST:PORT]
                    [-allow-host NAME] [-writes]

Serves the dashboard of every queue in the database over HTTP until
interrupted: counts per status and queue, throughput and depth over the last
hour, lists per status, each job's full state. Read-only unless -writes is
given: it then opens the database read-only too, and writes nothing to it.
It prints the URL it serves on once it listens.

The dashboard has no login: anyone who can reach the address can use it, so
keep it on loopback (the default) or behind a proxy that authenticates.
It answers only requests for its own host names (421 Misdirected Request
to any other), so that a web page cannot reach it by DNS rebinding: the
host of -addr, localhost, 127.0.0.1 and [::1], and those -allow-host
names.

flags:
  -addr HOST:PORT       where to listen (default 127.0.0.1:8080: this host
                        only; port 0 picks a free one)
  -allow-host NAME      also answer requests for the host NAME (the name a
                        proxy or a browser reaches it by); repeat the flag
                        or separate names with commas
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
	var hosts hostList
	f, pos, err := parseCommand("serve", args, func(fs *flag.FlagSet) {
		fs.StringVar(&addr, "addr", "127.0.0.1:8080", "")
		fs.BoolVar(&writes, "writes", false, "")
		fs.Var(&hosts, "allow-host", "")
	})
	if err == nil {
		err = noArgs(pos)
	}
	if err != nil {
		return err
	}
	s, err := openSession(ctx, f, writes)
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
	opts := dashboard.Options{AllowWrites: writes, Logger: log, Clock: s.clock, Hosts: servedHosts(addr, ln.Addr(), hosts)}
	srv := newServer(dashboard.New(q, opts), log)
	mode := "read-only"
	if writes {
		mode = "writes allowed"
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		fmt.Fprintf(stderr, "leaseq serve: warning: listening on %s, beyond loopback; the dashboard has no login "+
			"(it answers only its own address, localhost and the -allow-host names)\n", ln.Addr())
	}
	fmt.Fprintf(stdout, "leaseq serve: dashboard of %s (%s) on http://%s/\n", shown(f.db), mode, ln.Addr())
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

// hostList is the value of -allow-host: names, from the flag repeated or
// separated by commas.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(v string) error {
	for name := range strings.SplitSeq(v, ",") {
		if name = strings.TrimSpace(name); name == "" {
			return errors.New("empty host name")
		}
		*h = append(*h, name)
	}
	return nil
}

// servedHosts are the hosts the dashboard answers to: the host of -addr
// and the address it listens on (unless that is the unspecified address,
// which no request names), the loopback names, and the names given.
func servedHosts(addr string, bound net.Addr, extra []string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		hosts = append(hosts, host)
	}
	if tcp, ok := bound.(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		hosts = append(hosts, tcp.IP.String())
	}
	return append(hosts, extra...)
}

// newServer is serve's HTTP server for h. Every answer is one page or
// fragment read from the database (the overview refreshes by fetching
// again; nothing streams), so a request and its answer each take far less
// than these bounds, which stop a client that sends or reads slowly from
// holding a connection for ever.
func newServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
