package engine

import (
	"context"
	"database/sql"
	"fmt"
)

// PoolWait is err, a call's on db, saying that the call waited for a
// connection of db's pool (rule 47 in docs/rules.md) when err is the bare
// error of a context that ended while every connection db may open
// (SetMaxOpenConns) was in use: database/sql answers a wait for one with
// the context's error alone, which names no wait. The call's own
// connection, if it had one, is back in the pool by now, so a full pool
// means the call was queued behind the others. Any other error is
// returned as it is.
func PoolWait(db *sql.DB, err error) error {
	if !BareCtxErr(err) {
		return err
	}
	st := db.Stats()
	if st.MaxOpenConnections == 0 || st.InUse < st.MaxOpenConnections {
		return err
	}
	return &poolWait{max: st.MaxOpenConnections, cause: err}
}

// BareCtxErr reports whether err is a context's error itself, unwrapped:
// one that says nothing of what the call was doing when its context ended.
func BareCtxErr(err error) bool {
	return err == context.DeadlineExceeded || err == context.Canceled
}

// poolWait is the error of a call whose context ended while it waited for a
// connection of the pool.
type poolWait struct {
	max   int
	cause error
}

func (w *poolWait) Error() string {
	return fmt.Sprintf("waiting for a connection of the *sql.DB pool (SetMaxOpenConns %d, every one in use: "+
		"held by other calls, open *sql.Rows or transactions): %v", w.max, w.cause)
}

func (w *poolWait) Unwrap() error { return w.cause }
