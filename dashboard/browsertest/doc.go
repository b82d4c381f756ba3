// Package browsertest drives the leaseq dashboard in a real, headless
// Chromium (Debian's, at /usr/bin/chromium) with chromedp: the overview's
// counts against Stats, a Requeue from the quarantined list, a job ID full
// of markup shown as text, the overview refreshing itself, a form on
// another site refused, and a page at a rebound host name refused. It is a module of its own so that leaseq's go.mod
// stays free of browser tooling. Run it with
//
//	go test ./...                      # from this directory
//	go test ./... -args -shots DIR     # and save screenshots in DIR
package browsertest
