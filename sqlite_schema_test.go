package leaseq_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/sqlite"
)

// SQLite only: schema.sql in the root is SQLite's schema, its one copy.
// PostgreSQL's is its engine's own, internal/postgres/sql/schema.sql.

// schemaObjects selects what a schema is made of, each object's SQL as the
// database keeps it.
const schemaObjects = `SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name`

// TestSchemaIsTheRootFile: the schema New creates is the one schema.sql in
// the root creates, object for object and word for word, and no SQL file of
// the SQLite engine creates a table, index or trigger of its own, so there
// is no second copy to drift from it.
func TestSchemaIsTheRootFile(t *testing.T) {
	text, err := os.ReadFile("schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	if leaseq.SQLiteSchema != string(text) {
		t.Fatal("the schema New hands the SQLite engine is not schema.sql's text")
	}
	byFile := rawDB(t, filepath.Join(t.TempDir(), "file.db"))
	if _, err := byFile.Exec(string(text)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "new.db")
	openFixture(t, sqliteEngine, path, leaseq.Options{})
	byNew := rawDB(t, path)
	if got, want := dumpQuery(t, byNew, schemaObjects), dumpQuery(t, byFile, schemaObjects); got != want {
		t.Fatalf("New created\n%s\nschema.sql creates\n%s", got, want)
	}
	creates := regexp.MustCompile(`(?i)\bCREATE\s+(TABLE|INDEX|TRIGGER|UNIQUE\s+INDEX)\b`)
	for name, st := range sqlite.Statements() {
		if creates.MatchString(st.SQL) {
			t.Errorf("internal/sqlite/sql/%s.sql creates %q: the schema's one copy is schema.sql in the root",
				name, creates.FindString(st.SQL))
		}
	}
}

// TestSchemaUpgradesMatchNew: a database upgraded from each earlier
// version has the columns, indexes and triggers of one New creates, so
// that the one schema file describes every database.
func TestSchemaUpgradesMatchNew(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "new.db")
	openFixture(t, sqliteEngine, fresh, leaseq.Options{})
	want := schemaShape(t, rawDB(t, fresh))
	for _, file := range []string{"schema-v1.db", "schema-v2.db", "schema-v3.db"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			for _, suffix := range []string{"", "-journal"} {
				b, err := os.ReadFile(filepath.Join("testdata", file+suffix))
				if os.IsNotExist(err) && suffix != "" {
					continue
				} else if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "q.db"+suffix), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, "q.db")
			openFixture(t, sqliteEngine, path, leaseq.Options{})
			if got := schemaShape(t, rawDB(t, path)); got != want {
				t.Fatalf("after the upgrade:\n%s\na new database:\n%s", got, want)
			}
		})
	}
}

// schemaShape prints db's schema as it behaves: each table's columns (a
// table a column was added to keeps its CREATE text with the column
// appended, so tables are compared by their columns), each index's and
// trigger's SQL with its white space made one space, and the version.
func schemaShape(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	rows, err := db.Query(`SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var typ, name string
		var text sql.NullString
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		if typ == "table" {
			tables = append(tables, name)
			continue
		}
		fmt.Fprintf(&b, "%s %s: %s\n", typ, name, strings.Join(strings.Fields(text.String), " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range tables {
		fmt.Fprintf(&b, "table %s: ", name)
		b.WriteString(dumpQuery(t, db, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?1)`, name))
	}
	fmt.Fprintf(&b, "user_version %d\n", userVersion(t, db))
	return b.String()
}
