package leaseq

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Mux routes each claimed job to the Handler of its Job.Kind (rule 50 in
// docs/rules.md). Its ServeJob is a Handler, for [Queue.Work] or
// [Queue.Process]:
//
//	m := leaseq.NewMux()
//	leaseq.HandleJSON(m, "email.send", func(ctx context.Context, c leaseq.Claim, e Email) error { … })
//	err := q.Work(ctx, leaseq.WorkerOptions{Owner: "w1"}, m.ServeJob)
//
// A job whose kind has no handler fails permanently (Permanent), with a
// reason that names the kind: retrying cannot give it one. Handlers may be
// added while Work runs.
type Mux struct {
	mu sync.RWMutex
	h  map[string]Handler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{h: map[string]Handler{}} }

// Handle routes the jobs of kind to h; kind "" is the jobs enqueued without
// one. It panics, as http.ServeMux does, on a kind already handled, a kind
// no job could have (see Job.Kind), or a nil h: each is a mistake in the
// program, found when it starts.
func (m *Mux) Handle(kind string, h Handler) {
	if why := kindProblem(kind); why != "" {
		panic("leaseq: Mux.Handle: " + why)
	}
	if h == nil {
		panic(fmt.Sprintf("leaseq: Mux.Handle: nil handler for kind %q", kind))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.h[kind]; dup {
		panic(fmt.Sprintf("leaseq: Mux.Handle: kind %q has a handler already", kind))
	}
	m.h[kind] = h
}

// HandleJSON routes the jobs of kind to h with their payload decoded from
// JSON into a T (encoding/json; fields the payload has and T has not are
// ignored). An empty payload is T's zero value: a job enqueued without
// one (every Periodic template's) is not undecodable. A payload that does not decode fails the job permanently, with
// a reason that names the kind, T and the decoding error: the same payload
// would fail every attempt. It panics as Handle does.
func HandleJSON[T any](m *Mux, kind string, h func(ctx context.Context, c Claim, args T) error) {
	if h == nil {
		panic(fmt.Sprintf("leaseq: HandleJSON: nil handler for kind %q", kind))
	}
	m.Handle(kind, func(ctx context.Context, c Claim) error {
		var args T
		if len(c.Payload) == 0 {
			return h(ctx, c, args)
		}
		if err := json.Unmarshal(c.Payload, &args); err != nil {
			return Permanent(fmt.Errorf("kind %q: payload does not decode as %T: %w", kind, args, err))
		}
		return h(ctx, c, args)
	})
}

// ServeJob runs the handler of c's kind, or fails the job permanently when
// the kind has none. It is a Handler.
func (m *Mux) ServeJob(ctx context.Context, c Claim) error {
	m.mu.RLock()
	h, ok := m.h[c.Kind]
	m.mu.RUnlock()
	if !ok {
		return Permanent(fmt.Errorf("no handler for kind %q", c.Kind))
	}
	return h(ctx, c)
}
