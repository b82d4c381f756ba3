package main

import (
	"net/url"
	"strconv"
	"strings"
)

// secretParams are the query parameters of a PostgreSQL URL whose values
// are secrets, in lower case. Parameters that name files (passfile,
// sslkey, sslcert) are paths, not secrets, and are shown.
var secretParams = map[string]bool{"password": true, "sslpassword": true}

// redactedValue stands for a secret in what the CLI prints.
const redactedValue = "xxxxx"

// shown is the one form in which the CLI prints a -db argument, in the
// serve banner and in every error: a SQLite path quoted; a PostgreSQL URL
// with its userinfo password and the values of secretParams replaced by
// xxxxx; and, for a URL that does not parse, not the URL at all, since
// which part of it is the password is then unknown.
func shown(target string) string {
	if !isPostgresURL(target) {
		return strconv.Quote(target)
	}
	u, err := url.Parse(target)
	if err != nil {
		return "(a PostgreSQL URL that does not parse, not shown)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), redactedValue)
	}
	q := u.Query()
	for k := range q {
		if secretParams[strings.ToLower(k)] {
			q[k] = []string{redactedValue}
		}
	}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// secrets are the secrets of a PostgreSQL URL as they may appear in a
// message: decoded and as written.
func secrets(target string) []string {
	u, err := url.Parse(target)
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p, url.PathEscape(p), url.QueryEscape(p))
	}
	for k, vs := range u.Query() {
		if secretParams[strings.ToLower(k)] {
			for _, v := range vs {
				out = append(out, v, url.QueryEscape(v))
			}
		}
	}
	return out
}

// scrub replaces every secret of target in msg, a driver's message about
// it, with xxxxx: a driver may quote its connection string back. Secrets
// shorter than four characters are left, as replacing them would garble
// the message (and a password that short protects little).
func scrub(msg, target string) string {
	for _, s := range secrets(target) {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, redactedValue)
		}
	}
	return msg
}
