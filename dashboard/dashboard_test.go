package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

// fill puts some jobs of every status in "default" and a second queue
// "mail": default gets 2 pending, 1 scheduled, 1 leased, 1 expired lease,
// 2 done, 1 quarantined; mail 1 pending and 1 done.
func (s *site) fill() (mail *leaseq.Queue) {
	s.t.Helper()
	mail = s.queue("mail")
	s.enqueue(s.q, leaseq.Job{ID: "d-done-1"}, leaseq.Job{ID: "d-done-2"}, leaseq.Job{ID: "d-quar"},
		leaseq.Job{ID: "d-leased"}, leaseq.Job{ID: "d-expired"}, leaseq.Job{ID: "d-pend-1"}, leaseq.Job{ID: "d-pend-2"},
		leaseq.Job{ID: "d-later", RunAt: t0.Add(time.Hour)})
	s.enqueue(mail, leaseq.Job{ID: "m-done"}, leaseq.Job{ID: "m-pend"})
	s.clock.Advance(time.Minute)
	for range 2 {
		if ok, err := s.q.Finish(s.ctx, s.claim(s.q, time.Minute)); !ok || err != nil {
			s.t.Fatal(ok, err)
		}
	}
	s.quarantine(s.q, "d-quar", "upstream said 422")
	s.claim(s.q, time.Hour)   // d-leased
	s.claim(s.q, time.Second) // d-expired, once the clock moves
	if ok, err := mail.Finish(s.ctx, s.claim(mail, time.Minute)); !ok || err != nil {
		s.t.Fatal(ok, err)
	}
	s.clock.Advance(2 * time.Second)
	return mail
}

// TestOverviewShowsStats: the overview's cells are each queue's Stats.
func TestOverviewShowsStats(t *testing.T) { forEngines(t, testOverviewShowsStats) }

func testOverviewShowsStats(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	mail := s.fill()
	body := s.page("")
	for _, q := range []*leaseq.Queue{s.q, mail} {
		st, err := q.Stats(s.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"pending": fmt.Sprint(st.Pending), "scheduled": fmt.Sprint(st.Scheduled),
			"leased": fmt.Sprint(st.Leased), "expired": fmt.Sprint(st.Expired), "done": fmt.Sprint(st.Done),
			"quarantined": fmt.Sprint(st.Quarantined), "oldest": "1m 2s"}
		if got := counts(t, body, q.Name()); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("queue %s: overview shows %v, Stats say %v", q.Name(), got, want)
		}
	}
	if !strings.Contains(body, "<th scope=\"row\">All queues</th>") {
		t.Errorf("two queues but no total row")
	}
}

// TestOverviewChartsTheHour: the charts count what the database says
// happened in each minute, and the live fragment is the same part alone.
func TestOverviewChartsTheHour(t *testing.T) { forEngines(t, testOverviewChartsTheHour) }

func testOverviewChartsTheHour(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	s.fill()
	s.clock.Advance(10 * time.Minute)
	body := s.page("")
	for _, want := range []string{
		`<title>12:00 UTC: 0 done, 0 quarantined, 10 enqueued</title>`,
		`<title>12:01 UTC: 3 done, 1 quarantined, 0 enqueued</title>`,
		`<title>12:00 UTC: 10 pending or leased at the minute&#39;s end</title>`,
		`<title>12:01 UTC: 6 pending or leased at the minute&#39;s end</title>`,
		`<li><b>10</b> enqueued</li>`,
		`<li><b>3</b> done</li>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	if n := strings.Count(body, `<g class="col">`); n != 2*60 {
		t.Errorf("%d minute columns, want 60 per chart", n)
	}
	live := s.page("live")
	if strings.Contains(live, "<html") || !strings.Contains(live, `<tr data-queue="default">`) ||
		!strings.Contains(live, `12:01 UTC: 3 done, 1 quarantined`) {
		t.Errorf("live fragment is not the overview's changing part:\n%s", live)
	}
	if !strings.Contains(body, `data-live="live" data-every="5000"`) {
		t.Errorf("overview does not refresh itself every 5s by default")
	}
}

// TestListsPage: a list shows one status in enqueue order, and its Next
// links walk every job exactly once.
func TestListsPage(t *testing.T) { forEngines(t, testListsPage) }

func testListsPage(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{PageSize: 3})
	var want []string
	for i := range 8 {
		id := fmt.Sprintf("job-%d", i)
		want = append(want, id)
		s.enqueue(s.q, leaseq.Job{ID: id})
	}
	link := regexp.MustCompile(`<td class="id"><a href="([^"]+)">([^<]+)</a>`)
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
	var got []string
	ref := "jobs?queue=default&status=pending"
	for pages := 0; ref != ""; pages++ {
		if pages > 3 {
			t.Fatalf("more than 3 pages for 8 jobs at 3 a page")
		}
		body := s.page(strings.ReplaceAll(ref, "&amp;", "&"))
		for _, m := range link.FindAllStringSubmatch(body, -1) {
			got = append(got, m[2])
		}
		ref = ""
		if m := next.FindStringSubmatch(body); m != nil {
			ref = m[1]
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages listed %v, want %v", got, want)
	}
	if body := s.page("jobs?queue=default&status=done"); !strings.Contains(body, "No done jobs.") {
		t.Errorf("empty status list does not say so")
	}
}

// TestJobPage shows a job's whole row, a text payload as text and the
// reason in full.
func TestJobPage(t *testing.T) { forEngines(t, testJobPage) }

func testJobPage(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	s.enqueue(s.q, leaseq.Job{ID: "order 7/ü?&", Qty: 3, Payload: []byte("{\"sku\": \"A-1\"}\n"), Priority: 5, MaxAttempts: 4})
	s.quarantine(s.q, "order 7/ü?&", "the warehouse said: no such SKU")
	body := s.page("job?" + url.Values{"queue": {"default"}, "id": {"order 7/ü?&"}}.Encode())
	for _, want := range []string{
		`<code class="jobid">order 7/ü?&amp;</code>`,
		`<span class="status quarantined">quarantined</span>`,
		`<dt>Attempts</dt><dd>1 of 4</dd>`,
		`<dt>Token</dt><dd>1</dd>`,
		`<dt>Owner</dt><dd>worker-1</dd>`,
		`<dt>Priority</dt><dd>5</dd>`,
		`<dt>Qty</dt><dd>3</dd>`,
		`<time datetime="2026-01-01T12:00:00Z">2026-01-01 12:00:00.000 UTC</time>`,
		`<pre class="reason">the warehouse said: no such SKU</pre>`,
		`<pre class="payload">{&#34;sku&#34;: &#34;A-1&#34;}` + "\n</pre>",
		`15 bytes</span>`,
		`This dashboard is read-only`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %s\n%s", want, body)
		}
	}
	if strings.Contains(body, `<form`) {
		t.Errorf("read-only job page has a form")
	}
}

// TestPayloadShownAsHexOrCut: a payload that is not printable UTF-8 is a
// hex dump; one over the limit is cut, a text one at a character boundary.
func TestPayloadShownAsHexOrCut(t *testing.T) { forEngines(t, testPayloadShownAsHexOrCut) }

func testPayloadShownAsHexOrCut(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{PayloadLimit: 20})
	s.enqueue(s.q,
		leaseq.Job{ID: "bin", Payload: []byte{0x00, 0x01, 'A', 0xff, '<'}},
		leaseq.Job{ID: "long", Payload: []byte(strings.Repeat("é", 15))}, // 30 bytes
		leaseq.Job{ID: "ctl", Payload: []byte("ring\a")},
	)
	for _, tc := range []struct{ id, want string }{
		{"bin", `<span class="off">00000000</span>  00 01 41 ff 3c` + strings.Repeat(" ", 34) + `  <span class="ascii">..A.&lt;</span>`},
		{"bin", `5 bytes, not text: hex`},
		{"long", `<pre class="payload">` + strings.Repeat("é", 10) + `</pre>`},
		{"long", `30 bytes, the first 20 shown`},
		{"ctl", `72 69 6e 67 07`},
	} {
		if body := s.page("job?queue=default&id=" + tc.id); !strings.Contains(body, tc.want) {
			t.Errorf("job %s lacks %s\n%s", tc.id, tc.want, body)
		}
	}
}

// TestValuesAreEscaped (rule 37): a job ID, a reason, a payload and a
// queue name full of markup show as text on every page.
func TestValuesAreEscaped(t *testing.T) { forEngines(t, testValuesAreEscaped) }

func testValuesAreEscaped(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{AllowWrites: true})
	const id = `<script>alert(1)</script>`
	evil := s.queue(`"><img src=x onerror=alert(2)>`)
	s.enqueue(s.q, leaseq.Job{ID: id, Payload: []byte(`<b onmouseover="alert(3)">`)})
	s.enqueue(evil, leaseq.Job{ID: "x"})
	s.quarantine(s.q, id, `<iframe src="javascript:alert(4)">`)
	pages := []string{"", "live", "jobs?queue=default", "jobs?queue=default&status=quarantined",
		"job?" + url.Values{"queue": {"default"}, "id": {id}}.Encode(),
		"jobs?" + url.Values{"queue": {evil.Name()}}.Encode()}
	for _, ref := range pages {
		body := s.page(ref)
		for _, raw := range []string{"<script>alert", "<img src=x", "<b onmouseover", "<iframe"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s: raw markup %q in the page", ref, raw)
			}
		}
	}
	body := s.page(pages[4])
	for _, want := range []string{
		`<code class="jobid">&lt;script&gt;alert(1)&lt;/script&gt;</code>`,
		`<input type="hidden" name="id" value="&lt;script&gt;alert(1)&lt;/script&gt;">`,
		`<pre class="reason">&lt;iframe src=&#34;javascript:alert(4)&#34;&gt;</pre>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %s", want)
		}
	}
	list := s.page(pages[3])
	if !strings.Contains(list, `<a href="job?id=%3Cscript%3Ealert%281%29%3C%2Fscript%3E&amp;queue=default">&lt;script&gt;alert(1)&lt;/script&gt;</a>`) {
		t.Errorf("list does not link the job with its ID escaped:\n%s", list)
	}
}

// TestRequeueAndCancel: with writes allowed, the buttons' POSTs do what
// they say and redirect to the job's page, which says so.
func TestRequeueAndCancel(t *testing.T) { forEngines(t, testRequeueAndCancel) }

func testRequeueAndCancel(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{AllowWrites: true})
	s.enqueue(s.q, leaseq.Job{ID: "a"}, leaseq.Job{ID: "b"})
	s.quarantine(s.q, "a", "x")
	if body := s.page("job?queue=default&id=a"); !strings.Contains(body, `<form method="post" action="requeue">`) {
		t.Fatalf("no Requeue form on a quarantined job's page")
	}
	code, loc, body := s.post("requeue", url.Values{"queue": {"default"}, "id": {"a"}}, nil)
	if code != http.StatusSeeOther || loc != "job?id=a&queue=default&done=requeued" {
		t.Fatalf("requeue: %d Location %q\n%s", code, loc, body)
	}
	if st := s.status(s.q, "a"); st != leaseq.StatusPending {
		t.Fatalf("after Requeue job a is %s", st)
	}
	if body := s.page(loc); !strings.Contains(body, `<p class="flash" role="status">Requeued:`) {
		t.Errorf("job page after the redirect does not say it was requeued")
	}
	code, loc, _ = s.post("cancel", url.Values{"queue": {"default"}, "id": {"b"}, "reason": {"duplicate order"}}, nil)
	if code != http.StatusSeeOther || loc != "job?id=b&queue=default&done=cancelled" {
		t.Fatalf("cancel: %d Location %q", code, loc)
	}
	if st, _ := s.q.Get(s.ctx, "b"); st.Status != leaseq.StatusQuarantined || st.Reason != "duplicate order" {
		t.Fatalf("after Cancel job b is %s with reason %q", st.Status, st.Reason)
	}
	// Requeue of a job that is not quarantined is refused, with the reason.
	code, _, body = s.post("requeue", url.Values{"queue": {"default"}, "id": {"a"}}, nil)
	if code != http.StatusConflict || !strings.Contains(body, "only a quarantined job can be requeued") {
		t.Fatalf("requeue of a pending job: %d\n%s", code, body)
	}
	code, _, _ = s.post("requeue", url.Values{"queue": {"default"}, "id": {"nope"}}, nil)
	if code != http.StatusNotFound {
		t.Fatalf("requeue of an unknown job: %d", code)
	}
}

// TestReadOnlyRefusesWrites (rule 37): without AllowWrites a POST changes
// nothing.
func TestReadOnlyRefusesWrites(t *testing.T) { forEngines(t, testReadOnlyRefusesWrites) }

func testReadOnlyRefusesWrites(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	s.enqueue(s.q, leaseq.Job{ID: "a"}, leaseq.Job{ID: "b"})
	s.quarantine(s.q, "a", "x")
	if code, _, body := s.post("requeue", url.Values{"queue": {"default"}, "id": {"a"}}, nil); code != http.StatusForbidden ||
		!strings.Contains(body, "read-only") {
		t.Fatalf("requeue on a read-only dashboard: %d\n%s", code, body)
	}
	if code, _, _ := s.post("cancel", url.Values{"queue": {"default"}, "id": {"b"}}, nil); code != http.StatusForbidden {
		t.Fatalf("cancel on a read-only dashboard: %d", code)
	}
	if s.status(s.q, "a") != leaseq.StatusQuarantined || s.status(s.q, "b") != leaseq.StatusPending {
		t.Fatalf("a read-only dashboard changed a job")
	}
}

// TestCrossOriginWritesRefused (rule 37): a POST a browser sends from
// another site is refused by http.CrossOriginProtection, whether the
// browser says so in Sec-Fetch-Site or only in Origin; the same POST from
// the dashboard's own page goes through.
func TestCrossOriginWritesRefused(t *testing.T) { forEngines(t, testCrossOriginWritesRefused) }

func testCrossOriginWritesRefused(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{AllowWrites: true})
	s.enqueue(s.q, leaseq.Job{ID: "a"})
	s.quarantine(s.q, "a", "x")
	form := url.Values{"queue": {"default"}, "id": {"a"}}
	for _, h := range []http.Header{
		{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}},
		{"Sec-Fetch-Site": {"same-site"}, "Origin": {"http://sub.127.0.0.1"}},
		{"Origin": {"https://evil.example"}},
	} {
		if code, _, _ := s.post("requeue", form, h); code != http.StatusForbidden {
			t.Errorf("cross-origin POST with %v: %d, want 403", h, code)
		}
		if st := s.status(s.q, "a"); st != leaseq.StatusQuarantined {
			t.Fatalf("cross-origin POST with %v requeued the job", h)
		}
	}
	code, _, _ := s.post("requeue", form, http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {s.srv.URL}})
	if code != http.StatusSeeOther || s.status(s.q, "a") != leaseq.StatusPending {
		t.Fatalf("same-origin POST: %d, job %s; want 303 and pending", code, s.status(s.q, "a"))
	}
}

// TestMountedUnderAPrefix: served under /admin/queue/ of another mux, every
// link and the redirect after a button stay under the prefix.
func TestMountedUnderAPrefix(t *testing.T) { forEngines(t, testMountedUnderAPrefix) }

func testMountedUnderAPrefix(t *testing.T, e engine) {
	s := openSite(t, e, dashboard.Options{})
	mux := http.NewServeMux()
	mux.Handle("/admin/queue/", http.StripPrefix("/admin/queue", s.handler(dashboard.Options{AllowWrites: true})))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the service's own page", http.StatusTeapot)
	})
	s.serve(mux, "/admin/queue/")
	s.enqueue(s.q, leaseq.Job{ID: "a"})
	s.quarantine(s.q, "a", "x")

	body := s.page("")
	refs := regexp.MustCompile(`(?:href|src|action|data-live)="([^"]*)"`).FindAllStringSubmatch(body, -1)
	body = s.page("job?queue=default&id=a")
	refs = append(refs, regexp.MustCompile(`(?:href|src|action)="([^"]*)"`).FindAllStringSubmatch(body, -1)...)
	if len(refs) < 10 {
		t.Fatalf("only %d links found", len(refs))
	}
	for _, m := range refs {
		ref := strings.ReplaceAll(m[1], "&amp;", "&")
		if strings.HasPrefix(ref, "/") || strings.Contains(ref, "://") {
			t.Errorf("link %q is not relative", ref)
		}
		if u := s.url(ref); !strings.HasPrefix(u, s.srv.URL+"/admin/queue/") {
			t.Errorf("link %q resolves to %s, outside the prefix", ref, u)
		}
		if m[0][:6] == "action" {
			continue
		}
		if code, _ := s.get(ref); code != http.StatusOK {
			t.Errorf("link %q: %d", ref, code)
		}
	}
	code, loc, _ := s.post("requeue", url.Values{"queue": {"default"}, "id": {"a"}}, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("requeue under the prefix: %d", code)
	}
	if u := s.url(loc); !strings.HasPrefix(u, s.srv.URL+"/admin/queue/job?") {
		t.Fatalf("redirect to %s, outside the prefix", u)
	}
	// A mount that strips the trailing slash too still finds the pages.
	mux2 := http.NewServeMux()
	mux2.Handle("/ops/", http.StripPrefix("/ops/", s.handler(dashboard.Options{})))
	s.serve(mux2, "/ops/")
	s.page("")
	s.page("jobs?queue=default")
}

// TestNotFoundAndBadRequests: unknown pages, queues and jobs are 404, a
// status that is not one is 400; a queue name the database does not hold
// is never opened.
func TestNotFoundAndBadRequests(t *testing.T) { forEngines(t, testNotFoundAndBadRequests) }

func testNotFoundAndBadRequests(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	s.enqueue(s.q, leaseq.Job{ID: "a"})
	for _, tc := range []struct {
		ref  string
		code int
	}{
		{"nope", http.StatusNotFound},
		{"jobs?queue=ghost", http.StatusNotFound},
		{"job?queue=default&id=ghost", http.StatusNotFound},
		{"job?queue=default", http.StatusBadRequest},
		{"jobs?queue=default&status=lost", http.StatusBadRequest},
		{"jobs?queue=default&after=ghost", http.StatusNotFound},
		{"assets/", http.StatusNotFound},
		{"requeue?queue=default&id=a", http.StatusMethodNotAllowed},
		{"cancel?queue=default&id=a", http.StatusMethodNotAllowed},
	} {
		if code, body := s.get(tc.ref); code != tc.code {
			t.Errorf("GET %s: %d, want %d\n%s", tc.ref, code, tc.code, body)
		}
	}
	names := 0
	rows, err := s.q.DB().Query("SELECT count(DISTINCT queue) FROM leaseq_jobs")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		rows.Scan(&names)
	}
	rows.Close()
	if body := s.page(""); names != 1 || strings.Contains(body, "ghost") {
		t.Errorf("a queue asked for by name appeared: %d names", names)
	}
}

// TestEverythingIsEmbedded (rule 37): the pages load nothing from another
// origin, their assets come from the handler, and the headers forbid
// inline scripts and framing.
func TestEverythingIsEmbedded(t *testing.T) { forEngines(t, testEverythingIsEmbedded) }

func testEverythingIsEmbedded(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	resp, err := s.client.Get(s.url(""))
	if err != nil {
		t.Fatal(err)
	}
	_, body := s.read(resp)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") ||
		!strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if strings.Contains(body, "//") && regexp.MustCompile(`(?:href|src)="[a-z]*:?//`).MatchString(body) {
		t.Errorf("a page links another origin:\n%s", body)
	}
	assets := regexp.MustCompile(`(?:href|src)="(assets/[^"]+)"`).FindAllStringSubmatch(body, -1)
	if len(assets) < 3 {
		t.Fatalf("found %d assets, want the style, the script and the icon", len(assets))
	}
	for _, a := range assets {
		resp, err := s.client.Get(s.url(a[1]))
		if err != nil {
			t.Fatal(err)
		}
		code, b := s.read(resp)
		if code != http.StatusOK || len(b) == 0 || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age") {
			t.Errorf("%s: %d, %d bytes, Cache-Control %q", a[1], code, len(b), resp.Header.Get("Cache-Control"))
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " style=") {
		t.Errorf("inline script or style, which the policy would block")
	}
}

// TestReasonsAndLeasesShownForWhatTheyAre: a reason is labelled by what it
// is for the job's status — why a quarantined job is held, why a waiting
// job was retried, an earlier retry's on a done job (and none in a done
// list row, where it would read as a failure) — and a lease end is shown
// only on a leased job: a quarantined or done one whose last lease would
// still have run shows none.
func TestReasonsAndLeasesShownForWhatTheyAre(t *testing.T) {
	forEngines(t, testReasonsAndLeasesShownForWhatTheyAre)
}

func testReasonsAndLeasesShownForWhatTheyAre(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	s.enqueue(s.q, leaseq.Job{ID: "done"}, leaseq.Job{ID: "retried"}, leaseq.Job{ID: "held"}, leaseq.Job{ID: "live"})
	c := s.claim(s.q, time.Hour)
	if ok, err := s.q.Release(s.ctx, c, 0, "receiver answered 503"); !ok || err != nil {
		t.Fatalf("Release: %v %v", ok, err)
	}
	if c = s.claim(s.q, time.Hour); c.ID != "done" {
		t.Fatalf("claimed %q, want done", c.ID)
	}
	if ok, err := s.q.Finish(s.ctx, c); !ok || err != nil {
		t.Fatalf("Finish: %v %v", ok, err)
	}
	c = s.claim(s.q, time.Hour)
	if ok, err := s.q.Release(s.ctx, c, time.Hour, "receiver answered 429"); !ok || err != nil {
		t.Fatalf("Release: %v %v", ok, err)
	}
	s.quarantine(s.q, "held", "fraud check") // its lease would run for another minute
	s.claim(s.q, time.Hour)                  // live
	page := func(id string) string { return s.page("job?" + url.Values{"queue": {"default"}, "id": {id}}.Encode()) }
	for _, c := range []struct {
		id        string
		want, not []string
	}{
		{"done", []string{`<h2 id="reason">Reason of an earlier retry (the job is done)</h2>`, `receiver answered 503`},
			[]string{`Lease until`}},
		{"retried", []string{`<h2 id="reason">Why it was retried</h2>`, `receiver answered 429`}, []string{`Lease until`}},
		{"held", []string{`<h2 id="reason">Why it was quarantined</h2>`, `fraud check`}, []string{`Lease until`}},
		{"live", []string{`<h2 id="reason">Reason</h2>`, `<dt>Lease until</dt><dd><time datetime="2026-01-01T13:00:00Z"`}, nil},
	} {
		body := page(c.id)
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("page of %s lacks %s", c.id, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(body, n) {
				t.Errorf("page of %s shows %s", c.id, n)
			}
		}
	}
	if body := s.page("jobs?queue=default&status=done"); strings.Contains(body, "503") {
		t.Errorf("the done list shows the reason of an earlier retry:\n%s", body)
	}
	body := s.page("jobs?queue=default")
	for _, w := range []string{`retried: receiver answered 429`, `<div title="fraud check">fraud check</div>`} {
		if !strings.Contains(body, w) {
			t.Errorf("the list lacks %s", w)
		}
	}
	if strings.Contains(body, "503") {
		t.Errorf("the list shows the done job's earlier retry reason")
	}
}
