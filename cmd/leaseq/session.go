package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for PostgreSQL URLs

	"github.com/leaseq/leaseq"
)

// connectTimeout bounds opening the database, so that an unreachable
// PostgreSQL host fails the command instead of hanging it.
const connectTimeout = 10 * time.Second

// session is one command's hold on a database: the queues it opened and the
// instant its output is relative to.
type session struct {
	db     *sql.DB
	clock  leaseq.Clock // nil: the queue's own (see nowFromEnv)
	now    time.Time    // what times are shown relative to
	only   string       // -queue, or "" for every queue
	all    []string     // every queue with jobs, once names has read them
	queues map[string]*leaseq.Queue
}

// openSession opens the database f names and checks that it holds
// leaseq's jobs.
func openSession(ctx context.Context, f dbFlags) (*session, error) {
	clock, now, err := nowFromEnv()
	if err != nil {
		return nil, err
	}
	db, err := openDB(ctx, f.db)
	if err != nil {
		return nil, err
	}
	return &session{db: db, clock: clock, now: now, only: f.queue, queues: map[string]*leaseq.Queue{}}, nil
}

// nowFromEnv reads LEASEQ_NOW, an RFC 3339 instant that stands in for the
// clock, for tests and scripts that need reproducible output: the queues
// then decide everything at that instant, and times are shown relative to
// it. Unset, the queues keep their own clock (the system's; the database
// server's on PostgreSQL) and times are shown relative to this host's.
func nowFromEnv() (leaseq.Clock, time.Time, error) {
	v, ok := os.LookupEnv("LEASEQ_NOW")
	if !ok || v == "" {
		return nil, time.Now(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, time.Time{}, usageError{fmt.Sprintf("LEASEQ_NOW=%q is not an RFC 3339 time like 2025-01-01T00:00:00Z", v)}
	}
	return leaseq.NewManualClock(t), t, nil
}

// openDB opens arg: a PostgreSQL URL, or the path of an existing SQLite
// file. It never creates a database: a mistyped path would otherwise show
// an empty queue and look like good news.
func openDB(ctx context.Context, arg string) (*sql.DB, error) {
	if arg == "" {
		return nil, usageError{"no database: give -db PATH or -db URL, or set LEASEQ_DB"}
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if isPostgresURL(arg) {
		return openPostgres(ctx, arg)
	}
	return openSQLite(ctx, arg)
}

// isPostgresURL reports whether arg names a PostgreSQL database rather than
// a file.
func isPostgresURL(arg string) bool {
	return strings.HasPrefix(arg, "postgres://") || strings.HasPrefix(arg, "postgresql://")
}

// redacted is target for printing: a URL without its password, or, for a
// PostgreSQL URL that does not parse, no URL at all.
func redacted(target string) string {
	u, err := url.Parse(target)
	switch {
	case err != nil && isPostgresURL(target):
		return "the PostgreSQL URL"
	case err == nil && u.User != nil:
		return u.Redacted()
	}
	return target
}

// openPostgres connects to the URL. Messages show it without its password.
func openPostgres(ctx context.Context, rawURL string) (*sql.DB, error) {
	shown := redacted(rawURL)
	db, err := sql.Open("pgx", rawURL)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err == nil {
		err = schemaProblem(ctx, db)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("database %s: %s", shown, reason(err))
	}
	return db, nil
}

// openSQLite opens the existing SQLite file at path.
func openSQLite(ctx context.Context, path string) (*sql.DB, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("database %q does not exist", path)
	case err != nil:
		return nil, fmt.Errorf("database %q: %w", path, err)
	case st.IsDir():
		return nil, fmt.Errorf("database %q is a directory, not a SQLite file", path)
	}
	db, err := leaseq.Open(path)
	if err != nil {
		return nil, fmt.Errorf("database %q: %s", path, reason(err))
	}
	if err := schemaProblem(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %q: %s", path, reason(err))
	}
	return db, nil
}

// schemaProblem refuses a database without leaseq's table before
// leaseq.New would create one in it: an operator's tool pointed at the
// wrong database should say so, not write to it.
func schemaProblem(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM leaseq_jobs WHERE 1 = 0").Scan(&n); err != nil {
		return fmt.Errorf("not a leaseq database (reading its table leaseq_jobs: %v)", err)
	}
	return nil
}

// Close closes the queues and the database.
func (s *session) Close() {
	for _, q := range s.queues {
		q.Close()
	}
	s.db.Close()
}

// queue returns the queue called name, opening it on first use.
func (s *session) queue(ctx context.Context, name string) (*leaseq.Queue, error) {
	if q, ok := s.queues[name]; ok {
		return q, nil
	}
	q, err := leaseq.New(ctx, s.db, leaseq.Options{Name: name, Clock: s.clock})
	if err != nil {
		return nil, fmt.Errorf("queue %q: %s", name, reason(err))
	}
	s.queues[name] = q
	return q, nil
}

// names returns the queues a command covers: the one -queue names, else
// every queue that has jobs (read once per command, as find asks for each
// ID).
func (s *session) names(ctx context.Context) ([]string, error) {
	if s.only != "" {
		return []string{s.only}, nil
	}
	if s.all == nil {
		names, err := leaseq.Queues(ctx, s.db)
		if err != nil {
			return nil, errors.New(reason(err))
		}
		s.all = names
	}
	return s.all, nil
}

// notFound names the queue -queue chose in an unknown ID's error, as
// find's error names every queue when it looked in all.
func (s *session) notFound(err error) error {
	if s.only != "" && errors.Is(err, leaseq.ErrNotFound) {
		return fmt.Errorf("job not found in queue %q", s.only)
	}
	return err
}

// find returns the queue that holds job id: the one -queue names, else the
// only queue that has a job of that ID. IDs are unique per queue only, so
// an ID found in several queues needs -queue.
func (s *session) find(ctx context.Context, id string) (*leaseq.Queue, error) {
	if s.only != "" {
		return s.queue(ctx, s.only)
	}
	names, err := s.names(ctx)
	if err != nil {
		return nil, err
	}
	var found []*leaseq.Queue
	for _, name := range names {
		q, err := s.queue(ctx, name)
		if err != nil {
			return nil, err
		}
		switch _, err := q.Get(ctx, id); {
		case err == nil:
			found = append(found, q)
		case !errors.Is(err, leaseq.ErrNotFound):
			return nil, jobError{id, err}
		}
	}
	switch len(found) {
	case 0:
		return nil, jobError{id, errors.New("job not found in any queue")}
	case 1:
		return found[0], nil
	}
	inQueues := make([]string, len(found))
	for i, q := range found {
		inQueues[i] = q.Name()
	}
	return nil, jobError{id, fmt.Errorf("job is in %d queues (%s); choose one with -queue",
		len(found), strings.Join(inQueues, ", "))}
}
