package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/leaseq/leaseq"
)

const showUsage = `usage: leaseq show [-db PATH|URL] [-queue NAME] [-json] ID

Shows everything about job ID: status, claims, times (absolute and
relative), its reason in full, and its payload: as text when it is
printable UTF-8, else as a hex dump, cut after 4 KiB (-json gives all of
it). Without -queue, ID is looked for in every queue; when several queues
have a job of that ID, -queue must choose.

flags:
` + dbFlagsUsage + `
JSON:
  the JOB of "leaseq help list" and its payload in base64 (null when empty):
  {"queue": "default", "id": "order-7", ..., "reason": "...",
   "payload": "eyJza3UiOiJBLTEifQ=="}
`

// payloadShown is how many bytes of a payload show prints.
const payloadShown = 4 << 10

// runShow is "leaseq show ID".
func runShow(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f, pos, err := parseCommand("show", args, nil)
	switch {
	case err != nil:
		return err
	case len(pos) != 1:
		return usageError{fmt.Sprintf("want one job ID, got %d arguments", len(pos))}
	}
	id := pos[0]
	s, err := openSession(ctx, f, false)
	if err != nil {
		return err
	}
	defer s.Close()
	q, err := s.find(ctx, id)
	if err != nil {
		return err
	}
	st, err := q.Get(ctx, id)
	if err != nil {
		return jobError{id, s.notFound(err)}
	}
	out := showJSON{jobJSON: toJobJSON(st), Payload: st.Payload}
	if f.json {
		return writeJSON(stdout, out)
	}
	return printJob(stdout, out, s.now)
}

// printJob prints the job's fields as a table, then its reason and payload
// in full.
func printJob(w io.Writer, j showJSON, now time.Time) error {
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return when(*t, now, fullTime)
	}
	tw := newTable(w)
	for _, row := range [][2]string{
		{"queue", cell(j.Queue)},
		{"id", cell(j.ID)},
		{"kind", orNone(cell(j.Kind))},
		{"status", statusText(j.jobJSON, now)},
		{"qty", count(j.Qty)},
		{"priority", fmt.Sprint(j.Priority)},
		{"attempts", fmt.Sprintf("%d of %d", j.Attempts, j.MaxAttempts)},
		{"owner", orNone(cell(j.Owner))},
		{"token", fmt.Sprint(j.Token)},
		{"enqueued", at(&j.EnqueuedAt)},
		{"updated", at(&j.UpdatedAt)},
		{"run at", at(j.RunAt)},
		{"lease until", at(liveLease(j.jobJSON))},
		{"deadline", at(j.Deadline)},
	} {
		tw.row(row[0], row[1])
	}
	if j.Reason == "" {
		tw.row("reason", "-")
	}
	if len(j.Payload) == 0 {
		tw.row("payload", "-")
	}
	if err := tw.flush(); err != nil {
		return err
	}
	var b strings.Builder
	if j.Reason != "" {
		b.WriteString(reasonLabel(j.jobJSON) + ":\n" + block(j.Reason))
	}
	if len(j.Payload) > 0 {
		b.WriteString(payloadText(j.Payload))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// payloadText is a payload as show prints it: a header line, then the
// text, or a hex dump of what is not text, up to payloadShown bytes.
func payloadText(p []byte) string {
	shown := p[:min(len(p), payloadShown)]
	// A cut inside a character would make text look binary.
	for i := 0; i < utf8.UTFMax-1 && len(shown) < len(p) && !utf8.RuneStart(p[len(shown)]); i++ {
		shown = shown[:len(shown)-1]
	}
	head := "payload (" + plural(len(p), "byte")
	if len(shown) < len(p) {
		head += ", the first " + count(len(shown)) + " shown"
	}
	if isText(shown) {
		return head + ", text):\n" + block(string(shown))
	}
	dump := strings.TrimSuffix(hex.Dump(shown), "\n")
	return head + ", binary, in hex):\n" + block(dump)
}

// liveLease is the lease end show prints: only a leased job's, since on any
// other status the row keeps its last lease's end, which may still lie
// ahead and would read as a lease someone holds (-json gives it).
func liveLease(j jobJSON) *time.Time {
	if j.Status != string(leaseq.StatusLeased) {
		return nil
	}
	return j.LeaseUntil
}

// orNone is s, or "-" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
