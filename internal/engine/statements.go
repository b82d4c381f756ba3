package engine

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Statement is one embedded .sql file of an engine: one statement (a
// schema script may hold several, and says so), and its header. The header
// is the file's leading "--" comment lines; these keys in it are read:
//
//	-- args: ?1 queue, ?2 id, ...       (what each placeholder is)
//	-- returns: lease_until             (what a row of its result holds)
//	-- index: leaseq_jobs_ready         (the index the statement relies on)
//	-- fenced                           (it carries the fence's conditions)
//
// The other header lines say what the statement does and why.
type Statement struct {
	Name    string // the file name without .sql
	SQL     string // the text after the header
	Args    string
	Returns string
	Index   string // "" when it relies on no index (a script, a function call)
	Fenced  bool
}

// Statements reads every .sql file under dir of fsys. It fails on a file
// without a header or without SQL, so a broken file stops the package's
// init, not a call in production.
func Statements(fsys fs.FS, dir string) (map[string]Statement, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	out := make(map[string]Statement, len(names))
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		st, err := parseStatement(strings.TrimSuffix(path.Base(name), ".sql"), string(b))
		if err != nil {
			return nil, err
		}
		out[st.Name] = st
	}
	return out, nil
}

// MustStatements is Statements for a package's init: an engine whose SQL
// cannot be read cannot run.
func MustStatements(fsys fs.FS, dir string) map[string]Statement {
	st, err := Statements(fsys, dir)
	if err != nil {
		panic(err)
	}
	return st
}

func parseStatement(name, text string) (Statement, error) {
	st := Statement{Name: name}
	lines := strings.Split(text, "\n")
	i := 0
	for ; i < len(lines) && strings.HasPrefix(lines[i], "--"); i++ {
		st.header(strings.TrimSpace(strings.TrimPrefix(lines[i], "--")))
	}
	st.SQL = strings.TrimSpace(strings.Join(lines[i:], "\n"))
	switch {
	case i == 0:
		return st, fmt.Errorf("%s.sql: no header of -- lines", name)
	case st.SQL == "":
		return st, fmt.Errorf("%s.sql: no SQL after its header", name)
	}
	return st, nil
}

func (st *Statement) header(line string) {
	key, value, _ := strings.Cut(line, ":")
	value = strings.TrimSpace(value)
	switch key {
	case "args":
		st.Args = value
	case "returns":
		st.Returns = value
	case "index":
		st.Index = value
	case "fenced":
		st.Fenced = true
	}
}

// Names returns the statements' names, sorted.
func Names(sts map[string]Statement) []string {
	names := make([]string, 0, len(sts))
	for name := range sts {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
