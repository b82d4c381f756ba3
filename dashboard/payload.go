package dashboard

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// payloadView is a payload as a job's page shows it: as text when it is
// printable UTF-8, else as a hex dump, and at most a limit of bytes.
type payloadView struct {
	Size  int  // the whole payload's length in bytes
	Shown int  // how many bytes are shown
	Text  bool // shown as Body, else as Hex
	Body  string
	Hex   []hexLine
}

// hexLine is 16 bytes of a hex dump: their offset, their hex and their
// printable ASCII.
type hexLine struct {
	Offset, Hex, ASCII string
}

// Cut reports whether only part of the payload is shown.
func (p payloadView) Cut() bool { return p.Shown < p.Size }

// newPayloadView shows at most limit bytes of b. A text payload is cut at
// a character boundary, so the limit cannot make it look binary.
func newPayloadView(b []byte, limit int) payloadView {
	p := payloadView{Size: len(b)}
	shown := b[:min(len(b), limit)]
	if len(shown) < len(b) {
		for i := 0; i < utf8.UTFMax && len(shown) > 0 && !utf8.Valid(shown); i++ {
			shown = shown[:len(shown)-1]
		}
	}
	if printable(shown) {
		p.Text, p.Body, p.Shown = true, string(shown), len(shown)
		return p
	}
	shown = b[:min(len(b), limit)]
	p.Shown = len(shown)
	for off := 0; off < len(shown); off += 16 {
		p.Hex = append(p.Hex, newHexLine(off, shown[off:min(off+16, len(shown))]))
	}
	return p
}

// printable reports whether b is valid UTF-8 made of characters that show
// (letters, marks, numbers, punctuation, symbols, spaces), tabs and line
// breaks: no control characters.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsGraphic(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

func newHexLine(off int, b []byte) hexLine {
	var hx, ascii strings.Builder
	for i, c := range b {
		if i == 8 {
			hx.WriteByte(' ')
		}
		fmt.Fprintf(&hx, "%02x ", c)
		if c >= 0x20 && c < 0x7f {
			ascii.WriteByte(c)
		} else {
			ascii.WriteByte('.')
		}
	}
	// Padded to a full line's width, so a short last line's ASCII still
	// lines up in the monospaced dump.
	return hexLine{Offset: fmt.Sprintf("%08x", off), Hex: fmt.Sprintf("%-48s", strings.TrimSpace(hx.String())), ASCII: ascii.String()}
}
