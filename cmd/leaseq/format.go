package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// Layouts of instants in text output: seconds in tables, where width
// matters, and the stored millisecond in show, where a lease's last
// millisecond may be the question.
const (
	tableTime = time.RFC3339
	fullTime  = time.RFC3339Nano
)

// table prints rows in aligned columns. Cells must not hold tabs or
// newlines (cell quotes a value that does).
type table struct {
	out io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	t := &table{out: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// row adds a row. tabwriter reports write errors at Flush.
func (t *table) row(cells ...string) { io.WriteString(t.tw, strings.Join(cells, "\t")+"\n") }

// flush prints the rows, without the spaces that pad an empty last cell.
func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for line := range strings.Lines(t.buf.String()) {
		b.WriteString(strings.TrimRight(line, " \n") + "\n")
	}
	_, err := io.WriteString(t.out, b.String())
	return err
}

// writeJSON prints v as indented JSON. HTML is not escaped: the output is
// read by scripts and people, not pasted into a page.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// when shows t in layout, in UTC, and how far it is from now:
// "2025-01-01T00:00:01Z (3m ago)". The zero time, which the library uses
// for "none", is "-".
func when(t, now time.Time, layout string) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(layout) + " (" + relative(t.Sub(now)) + ")"
}

// relative says how far an instant is from now: "3m12s ago", "in 5m", or
// "now" within a second.
func relative(d time.Duration) string {
	switch {
	case d > -time.Second && d < time.Second:
		return "now"
	case d < 0:
		return span(-d) + " ago"
	}
	return "in " + span(d)
}

// span shows a positive duration in its two largest units, truncated:
// 42s, 3m12s, 5h, 2d3h.
func span(d time.Duration) string {
	units := []struct {
		name string
		size time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var b strings.Builder
	for i, u := range units {
		if d < u.size && i < len(units)-1 {
			continue
		}
		b.WriteString(strconv.FormatInt(int64(d/u.size), 10) + u.name)
		if i+1 < len(units) {
			if rest := (d % u.size) / units[i+1].size; rest > 0 {
				b.WriteString(strconv.FormatInt(int64(rest), 10) + units[i+1].name)
			}
		}
		break
	}
	return b.String()
}

// duration shows a duration given by the operator without trailing zero
// units: 24h, 1h30m, 90s → 1m30s.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// count shows n with a comma between thousands: 1,204.
func count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// plural is "1 byte" or "2 bytes".
func plural(n int, word string) string { return count(n) + " " + noun(n, word) }

// noun is word as n of it are called: "job" or "jobs".
func noun(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// cell is s as one table cell: as it is when every character prints, else
// quoted with Go escapes, so that an ID or a reason holding a tab, a
// newline or a terminal escape sequence can neither break the table nor
// drive the terminal.
func cell(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// cut shortens s to at most n characters, ending with "…" when it cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// firstLine is s up to its first newline, with "…" if more follows.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + "…"
	}
	return s
}

// block is text shown in full on lines of its own, each indented: a reason
// or a text payload. Newlines and tabs are kept; any other character that
// does not print is shown as a Go escape, for the reason given at cell.
func block(s string) string {
	var b strings.Builder
	b.WriteString("  ")
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString("\n  ")
		case r == '\t' || unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	b.WriteString("\n")
	return b.String()
}

// isText reports whether a payload reads as text: valid UTF-8 whose
// characters all print, or are newlines or tabs.
func isText(p []byte) bool {
	if !utf8.Valid(p) {
		return false
	}
	for _, r := range string(p) {
		if r != '\n' && r != '\t' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
