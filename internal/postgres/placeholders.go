package postgres

import (
	"fmt"
	"strings"
)

// SQLSTATE codes of a statement the server could not make sense of: what
// SQLite's ? placeholders get on PostgreSQL, which reads ? as an operator
// (a syntax error; "operator does not exist" for ?1).
const (
	sqlStateSyntaxError       = "42601"
	sqlStateUndefinedFunction = "42883"
)

// placeholderError is Tx's explain on PostgreSQL: err, of a statement of
// the service's (query) that the server could not parse or resolve, is
// wrapped with a word on placeholders when query holds a ? outside its
// literals, quoted identifiers and comments. The service's SQL is written
// once for both engines, and ? binds on SQLite alone. The query is never
// rewritten: a ? may be PostgreSQL's own operator (jsonb's), and only the
// server's refusal says it was not. errors.Is and errors.As still reach the
// server's error.
func placeholderError(query string, err error) error {
	switch sqlState(err) {
	case sqlStateSyntaxError, sqlStateUndefinedFunction:
	default:
		return err
	}
	if !hasQuestionMark(query) {
		return err
	}
	return fmt.Errorf("leaseq: the statement has ? placeholders, which PostgreSQL does not bind: write $1, $2, … (both engines bind them; ? is SQLite's alone): %w", err)
}

// hasQuestionMark reports whether query holds a ? in its SQL proper:
// outside '…' and E'…' literals, "…" identifiers, $tag$…$tag$ strings,
// -- comments and /* … */ comments (which nest on PostgreSQL).
func hasQuestionMark(query string) bool {
	for i := 0; i < len(query); i++ {
		switch c := query[i]; {
		case c == '?':
			return true
		case c == '\'':
			i = quotedEnd(query, i, (i > 0 && (query[i-1] == 'E' || query[i-1] == 'e')))
		case c == '"':
			i = quotedEnd(query, i, false)
		case c == '-' && strings.HasPrefix(query[i:], "--"):
			i = lineEnd(query, i)
		case c == '/' && strings.HasPrefix(query[i:], "/*"):
			i = commentEnd(query, i)
		case c == '$':
			i = dollarEnd(query, i)
		}
	}
	return false
}

// quotedEnd is the index of the quote that closes the one at query[i]
// (a doubled quote is one inside; after a backslash too, in an E'…'
// literal), or the end of query.
func quotedEnd(query string, i int, backslash bool) int {
	q := query[i]
	for j := i + 1; j < len(query); j++ {
		switch {
		case backslash && query[j] == '\\':
			j++
		case query[j] == q && j+1 < len(query) && query[j+1] == q:
			j++
		case query[j] == q:
			return j
		}
	}
	return len(query)
}

// lineEnd is the index of the end of the -- comment at query[i].
func lineEnd(query string, i int) int {
	if n := strings.IndexByte(query[i:], '\n'); n >= 0 {
		return i + n
	}
	return len(query)
}

// commentEnd is the index of the last / of the /* … */ comment at
// query[i], nested ones within it, or the end of query.
func commentEnd(query string, i int) int {
	depth := 0
	for j := i; j+1 < len(query); j++ {
		switch query[j : j+2] {
		case "/*":
			depth++
			j++
		case "*/":
			depth--
			j++
			if depth == 0 {
				return j
			}
		}
	}
	return len(query)
}

// dollarEnd is the index of the last $ of the $tag$…$tag$ string that
// begins at query[i], or i when the $ begins none: a $1 placeholder, or a
// $ within an identifier.
func dollarEnd(query string, i int) int {
	if i > 0 && identByte(query[i-1]) {
		return i
	}
	n := strings.IndexByte(query[i+1:], '$')
	if n < 0 {
		return i
	}
	tag := query[i : i+n+2]
	if name := tag[1 : len(tag)-1]; name != "" && (name[0] >= '0' && name[0] <= '9' || strings.IndexFunc(name, notIdent) >= 0) {
		return i
	}
	end := strings.Index(query[i+len(tag):], tag)
	if end < 0 {
		return len(query)
	}
	return i + len(tag) + end + len(tag) - 1
}

// identByte reports whether c may be part of an identifier.
func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func notIdent(r rune) bool { return r < 0x80 && !identByte(byte(r)) || r == '$' }
