package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/leaseq/leaseq"
)

// statuses are the list pages' tabs, in a job's order of life.
var statuses = []leaseq.Status{leaseq.StatusPending, leaseq.StatusLeased, leaseq.StatusDone, leaseq.StatusQuarantined}

// jobsPage is one page of a queue's jobs of one status, or of every status.
type jobsPage struct {
	Now    time.Time
	Queue  string
	Status leaseq.Status // "": every status
	Stats  leaseq.Stats
	Tabs   []tab
	Jobs   []leaseq.State
	After  string // the job this page starts after; "": the first page
	Next   string // the link to the next page; "": this is the last
	First  string // the link to the first page
	Leases bool   // the list may hold leased jobs, so it shows when leases end
	Kind   string // only the jobs of this kind (rule 50); "": every kind
	All    string // with Kind: the link to this list of every kind
}

// tab is one status's link above a list.
type tab struct {
	Label   string
	Count   int
	URL     string
	Current bool
}

func (p jobsPage) title() string {
	if p.Status == "" {
		return "All jobs · " + shown(p.Queue)
	}
	return string(p.Status) + " jobs · " + shown(p.Queue)
}

func (p jobsPage) queue() string { return p.Queue }

// jobs serves a page of a queue's jobs: ?queue=NAME&status=STATUS&after=ID,
// and &kind=KIND for only the jobs of one kind.
// A page asks List for one job more than it shows, to know whether there
// is a next page; List pages by AfterID, so a page costs the same at any
// depth of the queue (rule 35 in docs/rules.md).
func (d *dashboard) jobs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	qv := r.URL.Query()
	q, err := d.queueParam(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	status := leaseq.Status(qv.Get("status"))
	if status != "" && !isStatus(status) {
		d.fail(w, r, fmt.Errorf("status %q is not one of pending, leased, done, quarantined: %w", status, errBadRequest))
		return
	}
	kind := qv.Get("kind")
	if len(kind) > leaseq.MaxKindLen {
		d.fail(w, r, fmt.Errorf("kind is %d bytes, over the limit of %d: %w", len(kind), leaseq.MaxKindLen, errBadRequest))
		return
	}
	p := jobsPage{Now: d.now(), Queue: q.Name(), Status: status, After: qv.Get("after"), Kind: kind,
		First: withKind(listURL(q.Name(), status, ""), kind), Leases: status == "" || status == leaseq.StatusLeased,
		All: listURL(q.Name(), status, "")}
	if p.Stats, err = q.Stats(ctx); err != nil {
		d.fail(w, r, err)
		return
	}
	p.Jobs, err = q.List(ctx, leaseq.Filter{Status: status, AfterID: p.After, Limit: d.opts.PageSize + 1, Kind: kind})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if len(p.Jobs) > d.opts.PageSize {
		p.Jobs = p.Jobs[:d.opts.PageSize]
		p.Next = withKind(listURL(q.Name(), status, p.Jobs[len(p.Jobs)-1].ID), kind)
	}
	p.Tabs = tabs(q.Name(), status, p.Stats)
	for i := range p.Tabs {
		p.Tabs[i].URL = withKind(p.Tabs[i].URL, kind)
	}
	d.render(w, r, http.StatusOK, "jobs", p)
}

// tabs are the links to every status's list of queue, with their counts.
func tabs(queue string, current leaseq.Status, st leaseq.Stats) []tab {
	counts := map[leaseq.Status]int{
		leaseq.StatusPending:     st.Pending + st.Scheduled,
		leaseq.StatusLeased:      st.Leased + st.Expired,
		leaseq.StatusDone:        st.Done,
		leaseq.StatusQuarantined: st.Quarantined,
	}
	all := 0
	ts := make([]tab, 0, len(statuses)+1)
	for _, s := range statuses {
		all += counts[s]
		ts = append(ts, tab{Label: string(s), Count: counts[s], URL: listURL(queue, s, ""), Current: s == current})
	}
	return append(ts, tab{Label: "all", Count: all, URL: listURL(queue, "", ""), Current: current == ""})
}

// queueParam is the queue named by ?queue=, or the dashboard's own queue
// when there is none.
func (d *dashboard) queueParam(r *http.Request) (*leaseq.Queue, error) {
	name := r.URL.Query().Get("queue")
	if name == "" {
		return d.queues.home, nil
	}
	q, err := d.queues.named(r.Context(), name)
	if err != nil {
		return nil, fmt.Errorf("queue %q: %w", name, err)
	}
	return q, nil
}

func isStatus(s leaseq.Status) bool { return slices.Contains(statuses, s) }

// withKind is the list link u narrowed to the jobs of kind ("": u).
func withKind(u, kind string) string {
	if kind == "" {
		return u
	}
	return u + "&" + url.Values{"kind": {kind}}.Encode()
}

// kindURL is the list of queue's jobs of kind, of every status.
func kindURL(queue, kind string) string { return withKind(listURL(queue, "", ""), kind) }
