package dashboard

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/leaseq/leaseq"
)

// maxFormBytes bounds a button's form: a queue name, a job ID and a
// reason, each far shorter.
const maxFormBytes = 16 << 10

// cancelReason is the reason Cancel stores when the operator gives none.
const cancelReason = "cancelled from the dashboard"

// requeue serves the Requeue button: POST queue=NAME&id=ID.
func (d *dashboard) requeue(w http.ResponseWriter, r *http.Request) {
	d.act(w, r, "requeued", func(q *leaseq.Queue, id string) error {
		return q.Requeue(r.Context(), id)
	})
}

// cancel serves the Cancel button: POST queue=NAME&id=ID&reason=TEXT.
func (d *dashboard) cancel(w http.ResponseWriter, r *http.Request) {
	d.act(w, r, "cancelled", func(q *leaseq.Queue, id string) error {
		reason := r.PostFormValue("reason")
		if reason == "" {
			reason = cancelReason
		}
		return q.Cancel(r.Context(), id, reason)
	})
}

// act runs one button's operation on the job the form names and, when it
// worked, redirects to the job's page (POST, then GET: a reload does not
// repeat it). When it did not, the page says why: the job is not found, or
// is no longer in a status the operation applies to. Cross-site POSTs never
// get here (see New); with writes off every POST is refused.
func (d *dashboard) act(w http.ResponseWriter, r *http.Request, done string, op func(q *leaseq.Queue, id string) error) {
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
	name, id := r.PostFormValue("queue"), r.PostFormValue("id")
	if name == "" || id == "" {
		d.fail(w, r, fmt.Errorf("the form names no queue or no job: %w", errBadRequest))
		return
	}
	q, err := d.queues.named(r.Context(), name)
	if err != nil {
		d.fail(w, r, fmt.Errorf("queue %q: %w", name, err))
		return
	}
	if err := op(q, id); err != nil {
		d.fail(w, r, err)
		return
	}
	// A relative Location resolves against the URL the browser posted to,
	// so the redirect stays under whatever prefix the dashboard is mounted.
	w.Header().Set("Location", jobURL(name, id)+"&"+url.Values{"done": {done}}.Encode())
	w.WriteHeader(http.StatusSeeOther)
}
