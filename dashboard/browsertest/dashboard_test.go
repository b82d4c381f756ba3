package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

// countsJS reads every count the overview shows: queue → count name → the
// text of its cell.
const countsJS = `Object.fromEntries([...document.querySelectorAll("tbody tr[data-queue]")].map(tr =>
	[tr.dataset.queue, Object.fromEntries([...tr.querySelectorAll("td[data-count]")].map(td => [td.dataset.count, td.textContent.trim()]))]))`

// statsCells is what the overview's row of a queue should show for st.
func statsCells(st leaseq.Stats) map[string]string {
	n := func(v int) string { return strconv.Itoa(v) }
	return map[string]string{"pending": n(st.Pending), "scheduled": n(st.Scheduled), "leased": n(st.Leased),
		"expired": n(st.Expired), "done": n(st.Done), "quarantined": n(st.Quarantined)}
}

// TestOverviewShowsStats opens the overview and checks that the counts a
// person sees in each queue's row are Stats' (rule 37 in docs/rules.md), and that both charts are drawn.
func TestOverviewShowsStats(t *testing.T) {
	s := newSite(t, dashboard.Options{Refresh: -1})
	s.do("open the overview", chromedp.Navigate(s.base), chromedp.WaitVisible(chromedp.CSS(`svg.svgchart`)))
	shown := eval[map[string]map[string]string](s, countsJS)
	if st, _ := s.q.Stats(s.ctx); st.Leased == 0 || st.Expired == 0 || st.Done < 1000 {
		t.Errorf("the seed should leave leases, live and expired, and many done jobs: %+v", st)
	}
	for _, q := range []*leaseq.Queue{s.q, s.mail} {
		st, err := q.Stats(s.ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for k, v := range shown[q.Name()] {
			if k != "oldest" {
				got[k] = strings.ReplaceAll(v, ",", "") // thousands separators
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(statsCells(st)) {
			t.Errorf("queue %s: the overview shows %v, Stats say %+v", q.Name(), got, st)
		}
		if st.Done == 0 || st.Quarantined == 0 || st.Pending == 0 {
			t.Errorf("queue %s: the seed should leave pending, done and quarantined jobs, Stats %+v", q.Name(), st)
		}
	}
	if n := eval[int](s, `document.querySelectorAll("svg.svgchart g.col").length`); n != 120 {
		t.Errorf("%d minute columns in the charts, want 60 in each of 2", n)
	}
	if n := eval[int](s, `document.querySelectorAll("svg.svgchart rect.done").length`); n < 50 {
		t.Errorf("%d done bars, want one for nearly every minute of the seeded hour", n)
	}
	s.screenshot("overview")
}

// TestRequeueFromTheQuarantinedList follows an operator: from the overview
// to the quarantined jobs of "default", into the first one, and Requeue;
// the page says so and the database has the job pending.
func TestRequeueFromTheQuarantinedList(t *testing.T) {
	s := newSite(t, dashboard.Options{AllowWrites: true, Refresh: -1})
	s.do("open the overview and its quarantined jobs of default",
		chromedp.Navigate(s.base),
		chromedp.Click(chromedp.CSS(`tr[data-queue="default"] td[data-count="quarantined"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`table.jobs`)))
	s.waitFor("the quarantined tab", `document.querySelector(".tab.current").textContent.startsWith("quarantined")`)
	s.screenshot("list")
	id := eval[string](s, `document.querySelector("table.jobs td.id a").textContent`)
	if st := s.status(s.q, id); st != leaseq.StatusQuarantined {
		t.Fatalf("the quarantined list shows %s first, which is %s", id, st)
	}
	s.do("open "+id, chromedp.Click(chromedp.CSS(`table.jobs td.id a`)), chromedp.WaitVisible(chromedp.CSS(`#requeue`)))
	if got := eval[string](s, `document.querySelector("code.jobid").textContent`); got != id {
		t.Fatalf("job page of %q shows %q", id, got)
	}
	s.screenshot("job")
	s.do("click Requeue", chromedp.Click(chromedp.CSS(`#requeue`)), chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
	s.screenshot("requeued")
	if badge := eval[string](s, `document.querySelector("h1 .status").textContent`); badge != "pending" {
		t.Errorf("after Requeue the page shows the job %s", badge)
	}
	if st := s.status(s.q, id); st != leaseq.StatusPending {
		t.Fatalf("after Requeue the database has %s %s, want pending", id, st)
	}
	if url := eval[string](s, `location.pathname`); url != "/ops/job" {
		t.Errorf("after Requeue the browser is at %s, want /ops/job under the prefix", url)
	}
}

// TestMarkupIDShowsAsText: the job whose ID is <script>alert(1)</script>
// shows its ID as text in the list and on its page, and no dialog opens.
func TestMarkupIDShowsAsText(t *testing.T) {
	s := newSite(t, dashboard.Options{AllowWrites: true, Refresh: -1})
	before := dialogSaw.Load()
	s.do("open the quarantined mail",
		chromedp.Navigate(s.base+"jobs?queue=mail&status=quarantined"),
		chromedp.WaitVisible(chromedp.CSS(`table.jobs td.id a`)))
	if got := eval[string](s, `document.querySelector("table.jobs td.id a").textContent`); got != scriptID {
		t.Fatalf("the list shows the ID as %q, want the text %q", got, scriptID)
	}
	s.do("open the job", chromedp.Click(chromedp.CSS(`table.jobs td.id a`)), chromedp.WaitVisible(chromedp.CSS(`code.jobid`)))
	checks := map[string]string{
		"the ID":            `document.querySelector("code.jobid").textContent`,
		"the payload":       `document.querySelector("pre.payload").textContent`,
		"the reason":        `document.querySelector("pre.reason").textContent`,
		"the script tags":   `[...document.scripts].map(s => s.getAttribute("src")).join(" ")`,
		"the images":        `String(document.images.length)`,
		"the hidden inputs": `document.querySelector("input[name=id]").value`,
	}
	got := map[string]string{}
	for what, js := range checks {
		got[what] = eval[string](s, js)
	}
	want := map[string]string{
		"the ID":            scriptID,
		"the payload":       `<img src=x onerror=alert(2)>`,
		"the reason":        `template error near "<b>{{.Name}}</b>": no such field`,
		"the images":        "1", // the header's icon
		"the hidden inputs": scriptID,
	}
	js, _ := json.Marshal(got)
	for what, w := range want {
		if got[what] != w {
			t.Errorf("%s: %q, want %q (page: %s)", what, got[what], w, js)
		}
	}
	if scripts := got["the script tags"]; len(scripts) < 10 || scripts[:16] != "assets/live.js?v" {
		t.Errorf("scripts on the page: %q, want only the dashboard's own", scripts)
	}
	if n := dialogSaw.Load() - before; n != 0 {
		t.Errorf("%d JavaScript dialogs opened", n)
	}
}

// TestOverviewRefreshesItself: jobs enqueued while the overview is open
// show in its counts without a reload (the page's own variable survives).
func TestOverviewRefreshesItself(t *testing.T) {
	s := newSite(t, dashboard.Options{Refresh: 50 * time.Millisecond})
	s.do("open the overview", chromedp.Navigate(s.base), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="default"]`)))
	eval[bool](s, `window.notReloaded = true`)
	st, err := s.q.Stats(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []leaseq.Job
	for i := range 7 {
		jobs = append(jobs, leaseq.Job{ID: fmt.Sprintf("fresh-%d", i)})
	}
	if err := s.q.EnqueueBatch(s.ctx, jobs); err != nil {
		t.Fatal(err)
	}
	s.waitFor("the new pending count", fmt.Sprintf(
		`document.querySelector('tr[data-queue="default"] td[data-count="pending"]').textContent.trim() === %q`,
		strconv.Itoa(st.Pending+7)))
	if !eval[bool](s, `window.notReloaded === true`) {
		t.Errorf("the page reloaded to refresh")
	}
}

// TestFormOnAnotherSiteRefused: a page on another origin whose form posts
// a Requeue to the dashboard gets 403 from http.CrossOriginProtection, and
// the job stays quarantined (rule 37 in docs/rules.md).
func TestFormOnAnotherSiteRefused(t *testing.T) {
	s := newSite(t, dashboard.Options{AllowWrites: true, Refresh: -1})
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%srequeue">
<input name="queue" value="mail"><input name="id" value="%s"><button id="go">Win a prize</button></form>`,
			s.base, "&lt;script&gt;alert(1)&lt;/script&gt;")
	}))
	t.Cleanup(evil.Close)
	// The refusal is plain text, which the browser shows in a <pre>; the
	// other site's page has none.
	s.do("submit the other site's form", chromedp.Navigate(evil.URL), chromedp.Click(chromedp.CSS(`#go`)),
		chromedp.WaitVisible(chromedp.CSS(`pre`)))
	if path := eval[string](s, `location.pathname`); path != "/ops/requeue" {
		t.Fatalf("the form landed at %s", path)
	}
	body := eval[string](s, `document.body.innerText`)
	if st := s.status(s.mail, scriptID); st != leaseq.StatusQuarantined {
		t.Fatalf("a cross-site form requeued the job: it is %s; the browser shows %q", st, body)
	}
	if want := "cross-origin request detected"; !strings.Contains(strings.ToLower(body), want) {
		t.Errorf("the browser shows %q, want the refusal (%q)", body, want)
	}
}

// TestReasonsAndLeasesReadForWhatTheyAre follows an operator to a done job
// that was retried once and to a job cancelled while its lease ran: the
// done job's reason reads as an earlier retry's and is not in the done
// list, the cancelled job's as why it is quarantined, and neither page
// shows a lease end.
func TestReasonsAndLeasesReadForWhatTheyAre(t *testing.T) {
	s := newSite(t, dashboard.Options{Refresh: -1})
	// Priority 100: these are the next jobs claimed, ahead of the seed's.
	if err := s.q.EnqueueBatch(s.ctx, []leaseq.Job{{ID: "order-retried", Priority: 100}, {ID: "order-held", Priority: 100}}); err != nil {
		t.Fatal(err)
	}
	c := s.claimed("order-retried")
	if ok, err := s.q.Release(s.ctx, c, 0, "receiver answered 503: try again later"); !ok || err != nil {
		t.Fatalf("Release: %v %v", ok, err)
	}
	if ok, err := s.q.Finish(s.ctx, s.claimed("order-retried")); !ok || err != nil {
		t.Fatalf("Finish: %v %v", ok, err)
	}
	s.claimed("order-held")
	if err := s.q.Cancel(s.ctx, "order-held", "fraud check: hold"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, heading, shot string }{
		{"order-retried", "Reason of an earlier retry (the job is done)", "done-job"},
		{"order-held", "Why it was quarantined", "quarantined-job"},
	} {
		s.do("open the page of "+c.id, chromedp.Navigate(s.base+"job?queue=default&id="+c.id),
			chromedp.WaitVisible(chromedp.CSS(`h2#reason`)))
		if got := eval[string](s, `document.querySelector("h2#reason").textContent`); got != c.heading {
			t.Errorf("%s: the reason's heading reads %q, want %q", c.id, got, c.heading)
		}
		if eval[bool](s, `[...document.querySelectorAll("dl.fields dt")].some(dt => dt.textContent.includes("ease"))`) {
			t.Errorf("%s: the page shows a lease end", c.id)
		}
		s.screenshot(c.shot)
	}
	s.do("open the done list", chromedp.Navigate(s.base+"jobs?queue=default&status=done"),
		chromedp.WaitVisible(chromedp.CSS(`table.jobs`)))
	if eval[bool](s, `document.body.textContent.includes("503")`) {
		t.Errorf("the done list shows the reason of an earlier retry")
	}
}

// claimed claims the next job of s.q, which must be id, on a minute's
// lease.
func (s *site) claimed(id string) leaseq.Claim {
	s.t.Helper()
	c, ok, err := s.q.Claim(s.ctx, "worker-1", time.Minute)
	if err != nil || !ok || c.ID != id {
		s.t.Fatalf("Claim: %q %v %v, want %q", c.ID, ok, err, id)
	}
	return c
}

// TestRebindingRefused: a page at an attacker's name that resolves to the
// dashboard's address (DNS rebinding) sees only the 421 of the host
// check: the overview and a job's page are not shown, and a POST from that
// page — same-origin to the browser, so cross-origin protection lets it
// through — requeues nothing. The dashboard's own address still works.
func TestRebindingRefused(t *testing.T) {
	s := newSite(t, dashboard.Options{AllowWrites: true, Refresh: -1, Hosts: []string{"127.0.0.1", "localhost"}})
	rebound := fmt.Sprintf("http://%s:%d/ops/", rebindName, s.port)
	for _, ref := range []string{"", "job?" + url.Values{"queue": {"mail"}, "id": {scriptID}}.Encode()} {
		s.do("open "+rebound+ref, chromedp.Navigate(rebound+ref), chromedp.WaitVisible(chromedp.CSS(`body`)))
		body := eval[string](s, `document.body.innerText`)
		if !strings.Contains(body, "does not answer to the host") || eval[int](s, `document.querySelectorAll("table, dl").length`) != 0 {
			t.Fatalf("%s shows %q, want the host check's refusal", ref, body)
		}
	}
	code := eval[int](s, fmt.Sprintf(`fetch("requeue", {method: "POST", body: new URLSearchParams({queue: "mail", id: %q})}).then(r => r.status)`, scriptID),
		chromedp.EvalAwaitPromise)
	if code != http.StatusMisdirectedRequest {
		t.Errorf("the rebound page's POST: %d, want 421", code)
	}
	if st := s.status(s.mail, scriptID); st != leaseq.StatusQuarantined {
		t.Fatalf("the rebound page's POST requeued the job: it is %s", st)
	}
	s.do("open the overview on its own address", chromedp.Navigate(s.base), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="default"]`)))
}
