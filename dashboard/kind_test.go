package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

// TestKinds (rule 50): the lists show each job's kind, linked to the list
// of that kind; ?kind= lists only that kind, keeps it in the tabs' and
// pages' links and says so; the job page shows the kind; a kind no job can
// have is a bad request.
func TestKinds(t *testing.T) { forEngines(t, testKinds) }

func testKinds(t *testing.T, e engine) {
	s := newSite(t, e, dashboard.Options{PageSize: 1})
	s.enqueue(s.q, leaseq.Job{ID: "a", Kind: "email.send"}, leaseq.Job{ID: "b"}, leaseq.Job{ID: "c", Kind: "email.send"},
		leaseq.Job{ID: "d", Kind: "sms"}, leaseq.Job{ID: "e", Kind: "<b>x</b>"})
	kindLink := `<a href="jobs?queue=default&amp;kind=email.send">email.send</a>`
	if body := s.page("jobs?queue=default"); !strings.Contains(body, `<td class="kind">`+kindLink+`</td>`) {
		t.Errorf("list lacks the kind's link %s\n%s", kindLink, body)
	}
	body := s.page("jobs?queue=default&kind=email.send")
	for _, want := range []string{
		`Only jobs of kind <strong>email.send</strong>`,
		`href="jobs?queue=default&amp;status=pending&amp;kind=email.send"`,
		`href="jobs?after=a&amp;queue=default&amp;kind=email.send" rel="next"`,
		`<a href="jobs?queue=default">Show every kind</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("list of kind email.send lacks %s\n%s", want, body)
		}
	}
	if !strings.Contains(body, `>a</a>`) || strings.Contains(body, `>b</a>`) || strings.Contains(body, `>d</a>`) {
		t.Errorf("list of kind email.send shows other jobs:\n%s", body)
	}
	if body := s.page("jobs?queue=default&kind=email.send&after=a"); !strings.Contains(body, `>c</a>`) || strings.Contains(body, `>d</a>`) {
		t.Errorf("second page of kind email.send:\n%s", body)
	}
	if body := s.page("jobs?queue=default&kind=nothing"); !strings.Contains(body, "No jobs of this kind.") {
		t.Errorf("list of a kind with no jobs does not say so:\n%s", body)
	}
	body = s.page("job?" + url.Values{"queue": {"default"}, "id": {"d"}}.Encode())
	if want := `<dt>Kind</dt><dd><a href="jobs?queue=default&amp;kind=sms">sms</a></dd>`; !strings.Contains(body, want) {
		t.Errorf("job page lacks %s\n%s", want, body)
	}
	if body := s.page("jobs?" + url.Values{"queue": {"default"}, "kind": {"<b>x</b>"}}.Encode()); !strings.Contains(body, `&lt;b&gt;x&lt;/b&gt;</a>`) || strings.Contains(body, "<b>x") {
		t.Errorf("a kind with markup is not shown as text")
	}
	if code, _ := s.get("jobs?queue=default&kind=" + strings.Repeat("k", 65)); code != http.StatusBadRequest {
		t.Errorf("a kind over 64 bytes: status %d, want 400", code)
	}
}
