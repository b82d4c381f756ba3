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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/leaseq/leaseq"
)

// connectTimeout bounds opening the database, so that an unreachable
// PostgreSQL host fails the command instead of hanging it.
const connectTimeout = 10 * time.Second

// session is one command's hold on a database: the queues it opened and the
// instant its output is relative to.
type session struct {
	db     *sql.DB
	writes bool         // false: the database is opened read-only, and so are the queues
	clock  leaseq.Clock // nil: the queue's own (see nowFromEnv)
	now    time.Time    // what times are shown relative to
	only   string       // -queue, or "" for every queue
	all    []string     // every queue with jobs, once names has read them
	queues map[string]*leaseq.Queue
}

// openSession opens the database f names, read-only unless writes is set,
// and checks that it holds leaseq's jobs in the schema this leaseq writes.
// No command but migrate upgrades a schema: an older one is refused,
// naming the command that upgrades it, so that a service still running
// the release that wrote it is not locked out by an operator's look.
func openSession(ctx context.Context, f dbFlags, writes bool) (*session, error) {
	clock, now, err := nowFromEnv()
	if err != nil {
		return nil, err
	}
	db, err := openDB(ctx, f.db, writes)
	if err != nil {
		return nil, err
	}
	s := &session{db: db, writes: writes, clock: clock, now: now, only: f.queue, queues: map[string]*leaseq.Queue{}}
	if err := s.schemaCurrent(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: %s", shown(f.db), reason(err))
	}
	return s, nil
}

// schemaCurrent refuses a database without leaseq's table before
// leaseq.New would create one in it (an operator's tool pointed at the
// wrong database should say so, not write to it), and one whose schema is
// older or newer than this leaseq's: a read-only queue checks it without
// writing.
func (s *session) schemaCurrent(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM leaseq_jobs WHERE 1 = 0").Scan(&n); err != nil {
		return fmt.Errorf("not a leaseq database (reading its table leaseq_jobs: %v)", err)
	}
	q, err := leaseq.New(ctx, s.db, leaseq.Options{ReadOnly: true, Clock: s.clock})
	if err != nil {
		return err
	}
	return q.Close()
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
// file, read-only unless writes is set. It never creates a database: a
// mistyped path would otherwise show an empty queue and look like good
// news.
func openDB(ctx context.Context, arg string, writes bool) (*sql.DB, error) {
	if arg == "" {
		return nil, usageError{"no database: give -db PATH or -db URL, or set LEASEQ_DB"}
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if isPostgresURL(arg) {
		return openPostgres(ctx, arg, writes)
	}
	return openSQLite(arg, writes)
}

// isPostgresURL reports whether arg names a PostgreSQL database rather than
// a file.
func isPostgresURL(arg string) bool {
	return strings.HasPrefix(arg, "postgres://") || strings.HasPrefix(arg, "postgresql://")
}

// openPostgres connects to the URL; unless writes is set, every
// transaction of the session is read-only (default_transaction_read_only),
// so the server itself refuses a write. Messages show the URL redacted
// (see shown), and no secret of it.
func openPostgres(ctx context.Context, rawURL string, writes bool) (*sql.DB, error) {
	if _, err := url.Parse(rawURL); err != nil {
		// Neither the URL nor the parser's message, which quotes it.
		return nil, errors.New("database URL does not parse (it is not shown: it may hold a password); " +
			"characters such as @ : / ? # % in a user name or password must be percent-encoded")
	}
	db, err := connectPostgres(ctx, rawURL, writes)
	if err != nil {
		return nil, fmt.Errorf("database %s: %s", shown(rawURL), scrub(reason(err), rawURL))
	}
	return db, nil
}

// connectPostgres opens and pings the database at rawURL.
func connectPostgres(ctx context.Context, rawURL string, writes bool) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, err
	}
	if !writes {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openSQLite opens the existing SQLite file at path; unless writes is set,
// read-only (mode=ro), so that not a byte of the file changes.
func openSQLite(path string, writes bool) (*sql.DB, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("database %q does not exist", path)
	case err != nil:
		return nil, fmt.Errorf("database %q: %w", path, err)
	case st.IsDir():
		return nil, fmt.Errorf("database %q is a directory, not a SQLite file", path)
	}
	open := leaseq.OpenReadOnly
	if writes {
		open = leaseq.Open
	}
	db, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("database %q: %s", path, reason(err))
	}
	return db, nil
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
	q, err := leaseq.New(ctx, s.db, leaseq.Options{Name: name, Clock: s.clock, ReadOnly: !s.writes})
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
