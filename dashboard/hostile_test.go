package dashboard_test

import (
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

// request sends method to ref with the Host host ("" for the server's own
// address) and the headers, and returns the status and the body.
func (s *site) request(method, ref, host string, header http.Header, form url.Values) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url(ref), strings.NewReader(form.Encode()))
	if err != nil {
		s.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if host != "" {
		req.Host = host
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.read(resp)
}

// port is the port the site's server listens on.
func (s *site) port() string {
	u, err := url.Parse(s.srv.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	return u.Port()
}

// TestHostCheck (DNS rebinding): a dashboard given its Hosts answers a
// request for another host with 421, reads and writes alike, so a web page
// whose name was rebound to the dashboard's address reads no page and no
// payload, and its POST — Host and Origin both its own name,
// Sec-Fetch-Site same-origin, which cross-origin protection rightly lets
// through — changes nothing. The hosts it was given work, with any port
// and in any case.
func TestHostCheck(t *testing.T) { forEngines(t, testHostCheck) }

func testHostCheck(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{AllowWrites: true, Hosts: []string{"127.0.0.1", "localhost", "[::1]"}})
	s.enqueue(s.q, leaseq.Job{ID: "a", Payload: []byte("card 4111-1111")})
	s.quarantine(s.q, "a", "x")
	before, err := s.q.Get(s.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	evil := "rebind.evil.example:" + s.port()
	for _, ref := range []string{"", "live", "jobs?queue=default", "job?queue=default&id=a", "assets/style.css"} {
		code, body := s.request(http.MethodGet, ref, evil, nil, nil)
		if code != http.StatusMisdirectedRequest || strings.Contains(body, "4111") || strings.Contains(body, "<html") {
			t.Errorf("GET %s with Host %s: %d, want 421 and no page\n%s", ref, evil, code, body)
		}
	}
	form := url.Values{"queue": {"default"}, "id": {"a"}}
	rebound := http.Header{"Origin": {"http://" + evil}, "Sec-Fetch-Site": {"same-origin"}}
	if code, body := s.request(http.MethodPost, "requeue", evil, rebound, form); code != http.StatusMisdirectedRequest {
		t.Errorf("rebound POST requeue: %d, want 421\n%s", code, body)
	}
	if after, err := s.q.Get(s.ctx, "a"); err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("after the rebound POST the job is\n%+v (%v), want\n%+v", after, err, before)
	}
	for _, host := range []string{"", "localhost:" + s.port(), "LocalHost.:" + s.port(), "[::1]:" + s.port(), "127.0.0.1"} {
		if code, body := s.request(http.MethodGet, "job?queue=default&id=a", host, nil, nil); code != http.StatusOK || !strings.Contains(body, "4111") {
			t.Errorf("GET the job with Host %q: %d, want 200 with the payload", host, code)
		}
	}
	local := "localhost:" + s.port()
	own := http.Header{"Origin": {"http://" + local}, "Sec-Fetch-Site": {"same-origin"}}
	if code, _ := s.request(http.MethodPost, "requeue", local, own, form); code != http.StatusSeeOther || s.status(s.q, "a") != leaseq.StatusPending {
		t.Fatalf("POST requeue with Host %s: %d, job %s; want 303 and pending", local, code, s.status(s.q, "a"))
	}
}

// TestHostCheckOffWithoutHosts: without Hosts (a dashboard mounted in a
// service that routes by host) every host is answered, as documented.
func TestHostCheckOffWithoutHosts(t *testing.T) { forEngines(t, testHostCheckOffWithoutHosts) }

func testHostCheckOffWithoutHosts(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	if code, _ := s.request(http.MethodGet, "", "any.example:"+s.port(), nil, nil); code != http.StatusOK {
		t.Fatalf("GET with another Host and no Hosts: %d, want 200", code)
	}
}

// TestErrorEchoBounded: an error page names the value it refused, but a
// half-megabyte parameter comes back cut, not whole.
func TestErrorEchoBounded(t *testing.T) { forEngines(t, testErrorEchoBounded) }

func testErrorEchoBounded(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{})
	huge := "<b>é" + strings.Repeat("x", 500<<10)
	for _, ref := range []string{
		"job?" + url.Values{"queue": {"default"}, "id": {huge}}.Encode(),
		"jobs?" + url.Values{"queue": {"default"}, "after": {huge}}.Encode(),
		"jobs?" + url.Values{"queue": {huge}}.Encode(),
		"jobs?" + url.Values{"queue": {"default"}, "status": {huge}}.Encode(),
	} {
		code, body := s.get(ref)
		if code < 400 || len(body) > 16<<10 || !strings.Contains(body, "&lt;b&gt;é") || !strings.Contains(body, "more bytes)") {
			t.Errorf("GET %.40s…: %d, %d bytes; want an error page under 16 KiB with the value cut and escaped", ref, code, len(body))
		}
	}
}

// TestControlCharactersShownEscaped: an ID, a queue name or an owner with
// control characters is shown quoted with them escaped, as the CLI shows
// it, on every page's text; the links and forms still carry the ID as it
// is.
func TestControlCharactersShownEscaped(t *testing.T) {
	forEngines(t, testControlCharactersShownEscaped)
}

func testControlCharactersShownEscaped(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{AllowWrites: true})
	const id = "job\x01\x1b[31m"
	ctl := s.queue("q\x07")
	s.enqueue(ctl, leaseq.Job{ID: id})
	if _, _, err := ctl.Claim(s.ctx, "worker\x1b", time.Minute); err != nil {
		t.Fatal(err)
	}
	pages := []string{"", "live", "jobs?" + url.Values{"queue": {ctl.Name()}}.Encode(),
		"job?" + url.Values{"queue": {ctl.Name()}, "id": {id}}.Encode()}
	tags := regexp.MustCompile(`<[^>]*>`)
	for _, ref := range pages {
		body := s.page(ref)
		// Attributes keep the names as they are (a form's hidden ID, a
		// row's data-queue), for the browser to send back; the text the
		// operator reads must not hold them raw.
		if text := tags.ReplaceAllString(body, ""); strings.ContainsAny(text, "\x01\x07\x1b") {
			t.Errorf("%s: a raw control character in the page's text", ref)
		}
		if !strings.Contains(body, `&#34;q\a&#34;`) {
			t.Errorf("%s: the queue's name is not shown as \"q\\a\"", ref)
		}
	}
	for _, ref := range pages[2:] {
		body := s.page(ref)
		for _, want := range []string{`&#34;job\x01\x1b[31m&#34;`, `&#34;worker\x1b&#34;`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: lacks %s", ref, want)
			}
		}
	}
}
