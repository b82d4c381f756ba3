package postgres

import "testing"

// TestHasQuestionMark: a ? counts only in the SQL proper, never in a
// literal, a quoted identifier, a dollar-quoted string or a comment.
func TestHasQuestionMark(t *testing.T) {
	for query, want := range map[string]bool{
		`INSERT INTO orders (id, note) VALUES (?, ?)`:     true,
		`SELECT note FROM orders WHERE id=?1`:             true,
		`SELECT data ? 'k' FROM docs`:                     true,
		`INSERT INTO orders (id, note) VALUES ($1, $2)`:   false,
		`SELECT 'why?' FROM orders WHERE id = $1`:         false,
		`SELECT 'it''s?' , $1`:                            false,
		`SELECT 'it''s', ?`:                               true,
		`SELECT E'a\'?' , $1`:                             false,
		`SELECT E'a\\', ?`:                                true,
		`SELECT "what?" FROM t`:                           false,
		`SELECT 1 -- really?` + "\n" + `FROM t`:           false,
		`SELECT 1 -- ok` + "\n" + `WHERE a = ?`:           true,
		`SELECT /* a /* nested? */ still? */ 1`:           false,
		`SELECT /* a */ ?`:                                true,
		`SELECT $$why?$$, $1`:                             false,
		`SELECT $fn$ a ? b $fn$, $1`:                      false,
		`SELECT $1, ?`:                                    true,
		`SELECT a$b FROM t WHERE c = ?`:                   true,
		`SELECT 'unterminated ?`:                          false,
		`SELECT x FROM t WHERE y = $1 AND z = $2 -- done`: false,
	} {
		if got := hasQuestionMark(query); got != want {
			t.Errorf("hasQuestionMark(%q) = %v, want %v", query, got, want)
		}
	}
}
