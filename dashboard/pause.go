package dashboard

import (
	"context"
	"fmt"
	"net/http"

	"github.com/leaseq/leaseq"
)

// pause serves the Pause button of a queue's page: POST queue=NAME (rule
// 54 in docs/rules.md).
func (d *dashboard) pause(w http.ResponseWriter, r *http.Request) {
	d.actOnQueue(w, r, (*leaseq.Queue).Pause)
}

// resume serves the paused banner's Resume button: POST queue=NAME.
func (d *dashboard) resume(w http.ResponseWriter, r *http.Request) {
	d.actOnQueue(w, r, (*leaseq.Queue).Resume)
}

// actOnQueue runs a queue's button as act runs a job's, and redirects to
// the queue's page, whose banner shows the outcome.
func (d *dashboard) actOnQueue(w http.ResponseWriter, r *http.Request, op func(*leaseq.Queue, context.Context) error) {
	if !d.opts.AllowWrites {
		d.render(w, r, http.StatusForbidden, "error", errorPage{Code: http.StatusForbidden,
			Status: http.StatusText(http.StatusForbidden), Message: "This dashboard is read-only: it was started without writes allowed."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		d.fail(w, r, fmt.Errorf("reading the form: %v: %w", err, errBadRequest))
		return
	}
	name := r.PostFormValue("queue")
	if name == "" {
		d.fail(w, r, fmt.Errorf("the form names no queue: %w", errBadRequest))
		return
	}
	q, err := d.queues.named(r.Context(), name)
	if err != nil {
		d.fail(w, r, fmt.Errorf("queue %q: %w", name, err))
		return
	}
	if err := op(q, r.Context()); err != nil {
		d.fail(w, r, err)
		return
	}
	w.Header().Set("Location", listURL(name, "", ""))
	w.WriteHeader(http.StatusSeeOther)
}
