package leaseq

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"
)

// store is what every Queue on one *sql.DB shares: the writer's turn, the
// pinned write connection with its prepared statements, and the group-commit
// list. SQLite has one writer per file; Queues that took turns on the file
// lock instead of here would poll it with sleeps and each commit alone, so
// four named queues on one database would be far slower together than one.
// Sharing makes them as fast together as one queue.
type store struct {
	dbh  *sql.DB
	file string // the database file's path, as SQLite resolved it
	// writer lets one write transaction run at a time; see asWriter.
	writer chan struct{}
	// wc is the pinned write connection, guarded by writer; see writeConn.
	wc        *writeConn
	writeIdle time.Duration // writeConnIdle when the store was made
	// group gathers concurrent single calls into shared transactions; see
	// group.go.
	group group
	// queues counts the open Queues on the store, guarded by storesMu. When
	// the last one closes, the store lets go of its connection.
	queues int
	// closed is set, under the writer's turn, when the last Queue closed.
	closed bool
	// wake lets a call that makes a job claimable wake this process's
	// waiting workers of that queue (work.go).
	wake wakers
	// reads are the read statements prepared on db (see readStmt).
	readsMu sync.Mutex
	reads   map[string]*sql.Stmt
	// ident is the database's main file (EnqueueTx; see foreign).
	ident identity
}

// readStmt returns query prepared on the pool. database/sql prepares it
// again on each connection it runs on, once: a read that polls (an idle
// worker's) or repeats (Get) parses its SQL once per connection, not per
// call.
func (s *store) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.readsMu.Lock()
	defer s.readsMu.Unlock()
	if st, ok := s.reads[query]; ok {
		return st, nil
	}
	st, err := s.dbh.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.reads == nil {
		s.reads = make(map[string]*sql.Stmt)
	}
	s.reads[query] = st
	return st, nil
}

var (
	storesMu sync.Mutex
	stores   = map[*sql.DB]*store{}
)

// openStore returns db's store, making it if this is the first open Queue on
// db.
func openStore(db *sql.DB, file string) *store {
	storesMu.Lock()
	defer storesMu.Unlock()
	s := stores[db]
	if s == nil {
		s = &store{dbh: db, file: file, writer: make(chan struct{}, 1), writeIdle: writeConnIdle}
		stores[db] = s
	}
	s.queues++
	return s
}

// release ends one Queue's use of s. The last one gives the write
// connection back to the pool, so that db.Close can close the file; a call
// still in the group list then gets ErrClosed.
func (s *store) release() {
	storesMu.Lock()
	s.queues--
	last := s.queues == 0
	if last {
		delete(stores, s.dbh)
	}
	storesMu.Unlock()
	if !last {
		return
	}
	s.writer <- struct{}{}
	defer func() { <-s.writer }()
	s.closed = true
	if s.wc != nil {
		s.dropWriteConn(s.wc)
	}
	s.readsMu.Lock()
	for _, st := range s.reads {
		st.Close()
	}
	s.reads = nil
	s.readsMu.Unlock()
}

func (s *store) db() *sql.DB        { return s.dbh }
func (s *store) wakers() *wakers    { return &s.wake }
func (s *store) usable() error      { return dbClosed(s.dbh) }
func (s *store) serverClock() Clock { return nil }

// ErrClosed is wrapped by the error of every call on a Queue after
// [Queue.Close]. Nothing was written.
var ErrClosed = errors.New("queue is closed")

// Close stops the Queue's background work and gives back every connection
// it holds, so that db.Close closes the file once every Queue on db is
// closed. Calls after Close return an error wrapping [ErrClosed]; calls in
// flight finish or fail first. Close does not close db. It is safe to call
// more than once.
func (q *Queue) Close() error {
	if q.closed.Swap(true) {
		return nil
	}
	close(q.closing)
	q.e.release()
	return nil
}

// dbClosed reports whether db.Close has been called. A pinned connection
// keeps working after db.Close until it is given back, so the store asks
// before each transaction: PingContext on a context that is already done
// returns the closed database's error before it would take a connection, and
// the context's error otherwise.
func dbClosed(db *sql.DB) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.PingContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
