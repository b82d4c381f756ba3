package dashboard

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode"

	"github.com/leaseq/leaseq"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages are the page templates by name, each parsed with the layout and
// the shared parts. html/template escapes every value for the context it
// lands in: text, attribute, URL or script.
var pages = parsePages("overview", "jobs", "job", "error")

func parsePages(names ...string) map[string]*template.Template {
	base := template.Must(template.New("").Funcs(templateFuncs).ParseFS(templateFiles,
		"templates/layout.html", "templates/parts.html"))
	m := make(map[string]*template.Template, len(names))
	for _, n := range names {
		m[n] = template.Must(template.Must(base.Clone()).ParseFS(templateFiles, "templates/"+n+".html"))
	}
	return m
}

// view is what the layout needs of every page, around the page's own data.
type view struct {
	Title   string
	Now     time.Time
	Writes  bool
	Style   string // the stylesheet's versioned URL
	Script  string // the script's versioned URL
	Icon    string
	Queues  []string // every queue, for the navigation
	Current string   // the queue the page is about, if any
	Page    any
}

// errorPage is the page of a failed request.
type errorPage struct {
	Code    int
	Status  string
	Message string
}

// render executes the page template name with data inside the layout and
// writes it with status code. It renders into a buffer first, so a
// template error becomes a 500 rather than half a page.
func (d *dashboard) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	v := view{Now: d.now(), Writes: d.opts.AllowWrites, Page: data,
		Style: assetURL("style.css"), Script: assetURL("live.js"), Icon: assetURL("icon.svg")}
	if p, ok := data.(interface{ title() string }); ok {
		v.Title = p.title()
	}
	if p, ok := data.(interface{ queue() string }); ok {
		v.Current = p.queue()
	}
	if qs, err := d.queues.all(r.Context()); err == nil {
		for _, q := range qs {
			v.Queues = append(v.Queues, q.Name())
		}
	}
	d.write(w, r, code, pages[name], "layout", v)
}

// write executes one template of t into a buffer and sends it as HTML.
func (d *dashboard) write(w http.ResponseWriter, r *http.Request, code int, t *template.Template, name string, data any) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		d.log.Error("dashboard: template", "template", name, "path", r.URL.Path, "error", err)
		http.Error(w, "internal error rendering the page; see the server log", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

func (p errorPage) title() string { return p.Status }

var templateFuncs = template.FuncMap{
	"ago":        ago,
	"clock":      func(t time.Time) string { return t.UTC().Format("15:04") },
	"instant":    instant,
	"iso":        func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"num":        num,
	"jobURL":     jobURL,
	"listURL":    listURL,
	"kindURL":    kindURL,
	"waited":     func(now, t time.Time) string { return span(max(now.Sub(t), 0)) },
	"phase":      phase,
	"reasonIs":   reasonIs,
	"listReason": listReason,
	"at":         func(now, t time.Time) moment { return moment{Now: now, T: t} },
	"shown":      shown,
}

// shown is a name (an ID, a queue's, an owner's) as a page shows it: as it
// is, or, when it holds a character that does not print (a control
// character, say), Go-quoted with that character escaped, as the CLI shows
// it, so that it is visible instead of reaching the page raw.
func shown(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// moment is an instant with the page's now, for the "when" template.
type moment struct{ Now, T time.Time }

// phase is a job's status as an operator reads it at now: a pending job
// whose run_at is still ahead is "scheduled", a leased one whose lease has
// ended is "expired" (claimable again), as in [leaseq.Stats].
func phase(now time.Time, s leaseq.State) string {
	switch {
	case s.Status == leaseq.StatusPending && s.RunAt.After(now):
		return "scheduled"
	case s.Status == leaseq.StatusLeased && !s.LeaseUntil.After(now):
		return "expired"
	}
	return string(s.Status)
}

// reasonIs says what a job's reason is to an operator reading it next to
// its status: why a quarantined job is where it is, why a waiting job was
// retried, and on a done job the text of a retry that came before it
// succeeded (State.Reason keeps the last Release's text). "" for a job
// with no reason.
func reasonIs(s leaseq.State) string {
	switch {
	case s.Reason == "":
		return ""
	case s.Status == leaseq.StatusQuarantined:
		return "Why it was quarantined"
	case s.Status == leaseq.StatusDone:
		return "Reason of an earlier retry (the job is done)"
	}
	return "Why it was retried"
}

// listReason is the reason a list row shows: a quarantined job's as it is,
// a waiting job's marked as its retry's, and none for a done job, whose
// reason is only an earlier retry's and would read as a failure beside
// its status.
func listReason(s leaseq.State) string {
	switch s.Status {
	case leaseq.StatusQuarantined:
		return s.Reason
	case leaseq.StatusDone:
		return ""
	}
	if s.Reason == "" {
		return ""
	}
	return "retried: " + s.Reason
}

// jobURL is the relative link to one job's page.
func jobURL(queue, id string) string {
	return "job?" + url.Values{"queue": {queue}, "id": {id}}.Encode()
}

// listURL is the relative link to a page of a queue's jobs of one status
// ("" for every status), after the job after ("" for the first page).
func listURL(queue string, status leaseq.Status, after string) string {
	v := url.Values{"queue": {queue}}
	if status != "" {
		v.Set("status", string(status))
	}
	if after != "" {
		v.Set("after", after)
	}
	return "jobs?" + v.Encode()
}

// instant prints t in full, to the millisecond, in UTC; "—" for the zero
// time, which stands for "none" in a job's row.
func instant(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// ago prints t relative to now, to the second under a minute and in two
// units above: "3s ago", "in 2m 5s", "1h 4m ago"; "" for the zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + span(-d)
	}
	if d < time.Second {
		return "now"
	}
	return span(d) + " ago"
}

// span prints d in its two largest units.
func span(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m " + strconv.FormatInt(s%60, 10) + "s"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h " + strconv.FormatInt(s%3600/60, 10) + "m"
	}
	return strconv.FormatInt(s/86400, 10) + "d " + strconv.FormatInt(s%86400/3600, 10) + "h"
}

// num prints n with thousands separated by commas.
func num(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
