// Refreshes the overview in place: every data-every milliseconds, while the
// tab is visible, it fetches the fragment at data-live (a relative URL, so
// it stays under the dashboard's path prefix) and swaps it in. The
// fragment is HTML the server escaped; no script in it would run anyway.
// When a fetch fails the section is marked stale and the old numbers stay.
(function () {
  "use strict";
  var el = document.querySelector("[data-live]");
  if (!el || !window.fetch) return;
  var every = parseInt(el.getAttribute("data-every"), 10);
  if (!(every > 0)) return;
  var url = el.getAttribute("data-live");
  var timer = 0;
  var busy = false;

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(tick, every);
  }

  function tick() {
    if (document.hidden || busy) {
      schedule();
      return;
    }
    busy = true;
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error(r.status + " " + r.statusText);
        return r.text();
      })
      .then(function (html) {
        el.innerHTML = html;
        el.classList.remove("stale");
        el.removeAttribute("data-error");
        el.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function (e) {
        el.classList.add("stale");
        el.setAttribute("data-error", "Not updated: " + (e && e.message ? e.message : e));
      })
      .then(function () {
        busy = false;
        schedule();
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) tick();
  });
  schedule();
})();
