package browsertest

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/leaseq/leaseq/dashboard"
)

// TestPauseAndResumeFromTheQueuePage follows an operator (rule 54): from
// the overview into the queue "default", Pause; the page shows the banner
// and the database has the queue paused; the overview marks it; Resume
// from the banner undoes it.
func TestPauseAndResumeFromTheQueuePage(t *testing.T) {
	s := newSite(t, dashboard.Options{AllowWrites: true, Refresh: -1})
	s.do("open the overview and the queue default",
		chromedp.Navigate(s.base),
		chromedp.Click(chromedp.CSS(`tr[data-queue="default"] th a`)),
		chromedp.WaitVisible(chromedp.CSS(`#pause`)))
	s.do("click Pause", chromedp.Click(chromedp.CSS(`#pause`)), chromedp.WaitVisible(chromedp.CSS(`.banner.paused`)))
	s.screenshot("paused")
	if !s.paused() {
		t.Fatal("after Pause the database has the queue running")
	}
	if url := eval[string](s, `location.pathname`); url != "/ops/jobs" {
		t.Errorf("after Pause the browser is at %s, want /ops/jobs under the prefix", url)
	}
	s.do("open the overview", chromedp.Navigate(s.base), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="default"] .badge.paused`)))
	if n := eval[int](s, `document.querySelectorAll(".badge.paused").length`); n != 1 {
		t.Errorf("%d queues marked paused on the overview, want 1", n)
	}
	s.do("back to the queue and Resume",
		chromedp.Click(chromedp.CSS(`tr[data-queue="default"] th a`)),
		chromedp.WaitVisible(chromedp.CSS(`#resume`)),
		chromedp.Click(chromedp.CSS(`#resume`)),
		chromedp.WaitVisible(chromedp.CSS(`#pause`)))
	if s.paused() {
		t.Fatal("after Resume the database has the queue paused")
	}
}

// paused reports whether the queue "default" is paused.
func (s *site) paused() bool {
	s.t.Helper()
	st, err := s.q.Stats(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return st.Paused
}
