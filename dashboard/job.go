package dashboard

import (
	"fmt"
	"net/http"
	"time"

	"github.com/leaseq/leaseq"
)

// jobPage is one job's whole row.
type jobPage struct {
	Now     time.Time
	Job     leaseq.State
	Payload payloadView
	Done    string // what the last button did, after its redirect; "" if none
	// Requeue and Cancel say which buttons apply to the job as it is; the
	// layout shows them only when writes are allowed.
	Requeue, Cancel bool
	List            string // the link back to the job's list
}

func (p jobPage) title() string { return shown(p.Job.ID) + " · " + shown(p.Job.Queue) }
func (p jobPage) queue() string { return p.Job.Queue }

// doneMessages are what the page says after a button worked, by the ?done=
// its redirect carries. Only these fixed texts are ever shown, so a link
// cannot make the page say anything else.
var doneMessages = map[string]string{
	"requeued":  "Requeued: the job is pending again, claimable now, with its attempts reset.",
	"cancelled": "Cancelled: the job is quarantined; a worker holding it will be refused.",
}

// job serves one job's page: ?queue=NAME&id=ID.
func (d *dashboard) job(w http.ResponseWriter, r *http.Request) {
	q, err := d.queueParam(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	id := r.URL.Query().Get("id")
	if id == "" {
		d.fail(w, r, fmt.Errorf("no job ID given: %w", errBadRequest))
		return
	}
	st, err := q.Get(r.Context(), id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	p := jobPage{Now: d.now(), Job: st, Payload: newPayloadView(st.Payload, d.opts.PayloadLimit),
		Done:    doneMessages[r.URL.Query().Get("done")],
		Requeue: st.Status == leaseq.StatusQuarantined,
		Cancel:  st.Status == leaseq.StatusPending || st.Status == leaseq.StatusLeased,
		List:    listURL(st.Queue, st.Status, "")}
	d.render(w, r, http.StatusOK, "job", p)
}
