package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for PostgreSQL URLs

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

const serveUsage = `usage: leaseq serve -db PATH|URL [-queue NAME] [-addr HOST:PORT] [-writes]

  serve  the dashboard of every queue in the database, until interrupted.
         -db PATH|URL    a SQLite file (which must exist) or a postgres:// URL
         -queue NAME     the queue listed even while empty (default "default")
         -addr HOST:PORT where to listen (default 127.0.0.1:8080, loopback
                         only; port 0 picks a free one). The dashboard has
                         no login: anyone who can reach the address can use
                         it, so keep it on loopback or behind a proxy that
                         authenticates.
         -writes         show the Requeue and Cancel buttons (default:
                         read-only)
`

// serveConfig is what serve's flags say.
type serveConfig struct {
	db, queue, addr string
	writes          bool
}

// runServe serves the dashboard until ctx ends, then shuts the server down
// and returns nil. It prints the URL it serves on to stdout once it
// listens, so that a script (or a test) started with port 0 can find it.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, help, err := parseServe(args)
	switch {
	case help:
		_, err = io.WriteString(stdout, serveUsage)
		return err
	case err != nil:
		return err
	}
	db, err := openServeDB(cfg.db)
	if err != nil {
		return err
	}
	defer db.Close()
	q, err := leaseq.New(ctx, db, leaseq.Options{Name: cfg.queue})
	if err != nil {
		return err
	}
	defer q.Close()
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv := &http.Server{
		Handler:           dashboard.New(q, dashboard.Options{AllowWrites: cfg.writes, Logger: log}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	mode := "read-only"
	if cfg.writes {
		mode = "writes allowed"
	}
	if !isLoopback(ln.Addr()) {
		fmt.Fprintf(stderr, "leaseq serve: warning: listening on %s, beyond loopback; the dashboard has no login\n", ln.Addr())
	}
	fmt.Fprintf(stdout, "leaseq serve: dashboard of %s (%s) on http://%s/\n", redact(cfg.db), mode, ln.Addr())
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

// parseServe reads serve's flags. help is true for -h.
func parseServe(args []string) (cfg serveConfig, help bool, err error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.db, "db", "", "database path or URL")
	fs.StringVar(&cfg.queue, "queue", leaseq.DefaultName, "queue name")
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address")
	fs.BoolVar(&cfg.writes, "writes", false, "allow Requeue and Cancel")
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return cfg, true, nil
	case err != nil:
		return cfg, false, usageError{"serve: " + err.Error()}
	case fs.NArg() > 0:
		return cfg, false, usageError{fmt.Sprintf("serve: unexpected argument %q", fs.Arg(0))}
	case cfg.db == "":
		return cfg, false, usageError{"serve: -db is required"}
	}
	return cfg, false, nil
}

// openServeDB opens a PostgreSQL URL with pgx, or an existing SQLite file
// with leaseq.Open. A missing file is an error rather than a new, empty
// database: a mistyped path should not serve an empty queue.
func openServeDB(target string) (*sql.DB, error) {
	if strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://") {
		return sql.Open("pgx", target)
	}
	if _, err := os.Stat(target); err != nil {
		return nil, fmt.Errorf("database %s: %w", target, err)
	}
	return leaseq.Open(target)
}

// redact hides the password of a URL, for printing.
func redact(target string) string {
	if u, err := url.Parse(target); err == nil && u.User != nil {
		return u.Redacted()
	}
	return target
}

// isLoopback reports whether addr is a loopback address.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
