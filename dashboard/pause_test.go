package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

// TestPauseAndResume (rule 54): with writes allowed, a queue's page has a
// Pause button; its POST pauses the queue and the page then shows the
// banner with Resume, whose POST resumes it. The overview marks a paused
// queue. Read-only, the banner shows without the buttons and a POST
// changes nothing.
func TestPauseAndResume(t *testing.T) { forEngines(t, testPauseAndResume) }

func testPauseAndResume(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{AllowWrites: true})
	s.enqueue(s.q, leaseq.Job{ID: "a"})
	if body := s.page("jobs?queue=default"); !strings.Contains(body, `id="pause"`) || strings.Contains(body, "banner paused") {
		t.Fatalf("queue page of a running queue: no Pause button, or a paused banner\n%s", body)
	}
	code, loc, body := s.post("pause", url.Values{"queue": {"default"}}, nil)
	if code != http.StatusSeeOther || loc != "jobs?queue=default" {
		t.Fatalf("pause: %d Location %q\n%s", code, loc, body)
	}
	wantPaused(t, s.q, true)
	if body := s.page(loc); !strings.Contains(body, `class="banner paused"`) || !strings.Contains(body, `id="resume"`) || strings.Contains(body, `id="pause"`) {
		t.Fatalf("queue page of a paused queue: no banner with Resume\n%s", body)
	}
	if body := s.page(""); !strings.Contains(body, `class="badge paused"`) {
		t.Errorf("the overview does not mark the paused queue")
	}

	ro := newSite(t, e, dashboard.Options{})
	ro.enqueue(ro.q, leaseq.Job{ID: "a"})
	if err := ro.q.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	if body := ro.page("jobs?queue=default"); !strings.Contains(body, `class="banner paused"`) || strings.Contains(body, `id="resume"`) {
		t.Fatalf("read-only queue page of a paused queue: want the banner without Resume\n%s", body)
	}
	if code, _, _ := ro.post("resume", url.Values{"queue": {"default"}}, nil); code != http.StatusForbidden {
		t.Fatalf("resume on a read-only dashboard: %d, want 403", code)
	}
	wantPaused(t, ro.q, true)

	code, loc, body = s.post("resume", url.Values{"queue": {"default"}}, nil)
	if code != http.StatusSeeOther || loc != "jobs?queue=default" {
		t.Fatalf("resume: %d Location %q\n%s", code, loc, body)
	}
	wantPaused(t, s.q, false)
	if code, _ := s.get("pause?queue=default"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET pause: %d, want 405", code)
	}
	if code, _, _ := s.post("pause", url.Values{}, nil); code != http.StatusBadRequest {
		t.Errorf("pause with no queue: %d, want 400", code)
	}
	wantPaused(t, s.q, false)
}

func wantPaused(t *testing.T, q *leaseq.Queue, paused bool) {
	t.Helper()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Paused != paused {
		t.Fatalf("queue %s: Paused %v, want %v", q.Name(), st.Paused, paused)
	}
}
