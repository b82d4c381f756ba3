// Package dashboard is a web page for operating leaseq queues: how deep each
// queue is and what it did in the last hour, its jobs by status, one job's
// whole row, and buttons to requeue a quarantined job or cancel a waiting
// one (rule 37 in docs/rules.md).
//
// [New] returns an [http.Handler] to mount in the operator's own service,
// under any path prefix, behind the service's own authentication: the
// dashboard has no login of its own. Every page is rendered on the server
// from the database, so it counts the work of every process on it; its
// styles and its one small script are embedded, so it works offline.
//
//	mux.Handle("/admin/queue/", auth(http.StripPrefix("/admin/queue", dashboard.New(q, dashboard.Options{}))))
//
// It is read-only unless [Options.AllowWrites] is set. Writes are POSTs,
// refused when they come from another site ([http.CrossOriginProtection]).
// Where browsers reach it at an address of its own, give it the host names
// it answers to ([Options.Hosts]), so that DNS rebinding cannot reach it.
package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/leaseq/leaseq"
)

// Options configures the dashboard. The zero value is a read-only
// dashboard on the system clock.
type Options struct {
	// AllowWrites shows the Requeue and Cancel buttons and accepts their
	// POSTs. Without it the dashboard changes nothing.
	AllowWrites bool
	// Clock is the clock of the queues the dashboard opens besides the one
	// it is given, and the "now" its relative times and its chart's hour
	// are measured from. Give it the Clock the queue was made with. nil
	// leaves the queues their engine's own clock (the database server's on
	// PostgreSQL) and measures the page's times on this host's.
	Clock leaseq.Clock
	// Logger receives the errors the dashboard answers with a 500. nil
	// means slog.Default().
	Logger *slog.Logger
	// PageSize is how many jobs a list page shows; 0 means
	// DefaultPageSize. It is capped below leaseq.MaxListLimit.
	PageSize int
	// PayloadLimit is how many bytes of a job's payload its page shows;
	// 0 means DefaultPayloadLimit.
	PayloadLimit int
	// Hosts are the host names (or IP addresses) the dashboard answers
	// to, compared with the request's Host without its port and case; a
	// request for any other host is answered 421 Misdirected Request,
	// reads and writes alike. A dashboard a browser reaches at its own
	// address (as leaseq serve's, on loopback) needs them: without them a
	// web page the operator visits can reach it by DNS rebinding (its own
	// name resolved to the dashboard's address), and read every page and,
	// with AllowWrites, press the buttons, since to the browser that is
	// the page's own origin. nil answers every host, for a dashboard
	// mounted in a service that routes and authenticates by host itself.
	Hosts []string
	// Refresh is how often an open overview fetches its numbers and charts
	// again, without reloading the page; 0 means DefaultRefresh, and a
	// negative value turns it off.
	Refresh time.Duration
}

// Defaults used where Options leaves a field at zero.
const (
	DefaultPageSize     = 50
	DefaultPayloadLimit = 16 << 10
	DefaultRefresh      = 5 * time.Second
)

// systemClock is the clock used when Options.Clock is nil.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// dashboard serves the pages of one database's queues.
type dashboard struct {
	opts   Options
	queues *queueSet
	log    *slog.Logger
}

// New returns the dashboard of q's database: every queue in it, with q's
// own listed even while it is empty. Mount it at the root of a path prefix
// ending in "/" (see the package example): its links are relative, so
// they work under any prefix. It does not close q; the other queues it
// opens on q's database stay open as long as the process runs.
func New(q *leaseq.Queue, opts Options) http.Handler {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	opts.PageSize = min(opts.PageSize, leaseq.MaxListLimit-1) // List is asked for one more
	if opts.PayloadLimit <= 0 {
		opts.PayloadLimit = DefaultPayloadLimit
	}
	opts.Refresh = cmp.Or(opts.Refresh, DefaultRefresh)
	// The queues it opens get opts.Clock as it is: nil lets each keep its
	// engine's own clock (the database server's, on PostgreSQL).
	queues := newQueueSet(q, opts.Clock)
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	d := &dashboard{opts: opts, queues: queues, log: opts.Logger}
	if d.log == nil {
		d.log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.overview)
	mux.HandleFunc("GET /live", d.live)
	mux.HandleFunc("GET /jobs", d.jobs)
	mux.HandleFunc("GET /job", d.job)
	mux.HandleFunc("POST /requeue", d.requeue)
	mux.HandleFunc("POST /cancel", d.cancel)
	mux.HandleFunc("/requeue", postOnly)
	mux.HandleFunc("/cancel", postOnly)
	mux.HandleFunc("POST /pause", d.pause) // rule 54 (pause.go)
	mux.HandleFunc("POST /resume", d.resume)
	mux.HandleFunc("/pause", postOnly)
	mux.HandleFunc("/resume", postOnly)
	mux.Handle("GET /assets/", assetHandler())
	mux.HandleFunc("/", d.notFound)
	return securityHeaders(hostCheck(opts.Hosts, http.NewCrossOriginProtection().Handler(rooted(mux))))
}

// hostCheck answers 421 to a request whose Host is not one of hosts (none:
// every host is answered).
func hostCheck(hosts []string, h http.Handler) http.Handler {
	if len(hosts) == 0 {
		return h
	}
	allowed := make(map[string]bool, len(hosts))
	for _, host := range hosts {
		allowed[hostName(host)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[hostName(r.Host)] {
			http.Error(w, "this dashboard does not answer to the host "+strconv.Quote(cut(r.Host, 100)), http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostName is a Host header or a Hosts entry as they are compared: without
// the port, the brackets of an IPv6 address and a final dot, in lower case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// rooted gives the mux a path that starts with "/" when the prefix the
// dashboard is mounted under was stripped with its trailing slash.
func rooted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/") {
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + r.URL.Path
			r2.URL.RawPath = ""
			r = r2
		}
		h.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy lets a page load only the dashboard's own styles
// and script and fetch only its own fragments, so that even a value that
// escaped escaping could not run, and forbids framing, so the buttons
// cannot be clicked through another site's page.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// securityHeaders sets the headers every answer carries.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

// now is the dashboard's clock read once per page.
func (d *dashboard) now() time.Time { return d.opts.Clock.Now() }

// fail answers a request that could not be served with an error page: 404
// for an unknown job or queue, 400 for a refused argument, 409 for an
// operation that does not apply to the job as it is, 500 (logged) for the
// rest.
func (d *dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, leaseq.ErrNotFound), errors.Is(err, errNoQueue), errors.Is(err, errNoPage):
		code = http.StatusNotFound
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	case errors.Is(err, leaseq.ErrInvalid):
		code = http.StatusConflict
	case errors.Is(err, r.Context().Err()):
		return // the client went away
	default:
		d.log.Error("dashboard", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	d.render(w, r, code, "error", errorPage{Code: code, Status: http.StatusText(code), Message: cut(err.Error(), maxMessage)})
}

// maxMessage is how many bytes of an error an error page shows: enough for
// any message of the queue's, with the ID or value it names, while a value
// of half a megabyte in the request is not echoed back whole.
const maxMessage = 1024

// cut shortens s to at most n bytes, at a character boundary, saying how
// much it left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… (%d more bytes)", len(s)-i)
}

// errNoPage is the error of a path the dashboard does not serve.
var errNoPage = errors.New("no such page")

// errBadRequest is wrapped by the error of a request whose parameters make
// no sense.
var errBadRequest = errors.New("bad request")

// postOnly answers a button's URL asked for with another method than POST:
// a link or a prefetch must never requeue or cancel anything.
func postOnly(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	http.Error(w, "use POST", http.StatusMethodNotAllowed)
}

func (d *dashboard) notFound(w http.ResponseWriter, r *http.Request) {
	d.fail(w, r, fmt.Errorf("%s: %w", r.URL.Path, errNoPage))
}
