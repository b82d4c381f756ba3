package leaseq_test

// Tests of the rights a PostgreSQL role needs: a current schema opens with
// DML rights alone, and with read-only ones for the reads.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// pgRole creates a login role on the database at dbURL, lets grants (SQL
// run as the database's owner, with %s for the role's name) shape its
// rights, and returns the database opened as that role. The role is
// dropped when the test ends, after its connections are closed.
func pgRole(t *testing.T, admin *sql.DB, dbURL string, grants ...string) *sql.DB {
	t.Helper()
	suffix := make([]byte, 4)
	rand.Read(suffix)
	name := "leaseq_role_" + hex.EncodeToString(suffix)
	const password = "role-password"
	if _, err := admin.Exec("CREATE ROLE " + name + " LOGIN PASSWORD '" + password + "'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, stmt := range []string{"DROP OWNED BY " + name, "DROP ROLE " + name} {
			if _, err := admin.Exec(stmt); err != nil {
				t.Errorf("%s: %v", stmt, err)
			}
		}
	})
	for _, g := range grants {
		if _, err := admin.Exec(fmt.Sprintf(g, name)); err != nil {
			t.Fatalf("%s: %v", fmt.Sprintf(g, name), err)
		}
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(name, password)
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // before the role is dropped: cleanups run last first
	return db
}

// currentSchema returns a fresh database holding the current schema,
// created by its owner, and the owner's pool on it.
func currentSchema(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dbURL := pgtest.URL(t)
	admin, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	q, err := leaseq.New(context.Background(), admin, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	// PostgreSQL 15 grants PUBLIC no CREATE on public already; say it, so
	// that the test means the same on an older server.
	if _, err := admin.Exec("REVOKE CREATE ON SCHEMA public FROM PUBLIC"); err != nil {
		t.Fatal(err)
	}
	return dbURL, admin
}

// TestPostgresDMLRole: a role with SELECT, INSERT, UPDATE and DELETE on
// the tables (and USAGE on their sequences), and no CREATE anywhere, opens
// a queue on a current schema and runs it: enqueue, claim, finish, stats.
// New used to run CREATE TABLE IF NOT EXISTS first, which such a role may
// not.
func TestPostgresDMLRole(t *testing.T) {
	t.Parallel()
	dbURL, admin := currentSchema(t)
	db := pgRole(t, admin, dbURL,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO %s",
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO %s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		t.Fatalf("New as a DML-only role on a current schema: %v", err)
	}
	defer q.Close()
	if err := q.Enqueue(ctx, leaseq.Job{ID: "a", Qty: 1}); err != nil {
		t.Fatal(err)
	}
	if err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "b"}, {ID: "c"}}); err != nil {
		t.Fatal(err)
	}
	c, ok, err := q.Claim(ctx, "w", time.Minute)
	if err != nil || !ok {
		t.Fatalf("Claim: %v, %v", ok, err)
	}
	if ok, err := q.Finish(ctx, c); !ok || err != nil {
		t.Fatalf("Finish: %v, %v", ok, err)
	}
	if n, err := q.Purge(ctx, time.Now().Add(time.Hour)); n != 1 || err != nil {
		t.Fatalf("Purge: %d, %v; want 1", n, err)
	}
	st, err := q.Stats(ctx)
	if err != nil || st.Pending != 2 || st.Done != 0 {
		t.Fatalf("Stats: %s, %v; want 2 pending", fmtStats(st), err)
	}
}

// TestPostgresReadOnlyRole: a role that may only read, in read-only
// transactions by default, opens a queue on a current schema and reads it
// (Stats, List, Get, Activity, Queues); a write is refused by the server
// with an error, not a hang.
func TestPostgresReadOnlyRole(t *testing.T) {
	t.Parallel()
	dbURL, admin := currentSchema(t)
	q, err := leaseq.New(context.Background(), admin, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(context.Background(), leaseq.Job{ID: "a", Qty: 1}); err != nil {
		t.Fatal(err)
	}
	q.Close()
	db := pgRole(t, admin, dbURL,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO %s",
		"ALTER ROLE %s SET default_transaction_read_only = on")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ro, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		t.Fatalf("New as a read-only role on a current schema: %v", err)
	}
	defer ro.Close()
	if st, err := ro.Stats(ctx); err != nil || st.Pending != 1 {
		t.Fatalf("Stats: %s, %v; want 1 pending", fmtStats(st), err)
	}
	if page, err := ro.List(ctx, leaseq.Filter{}); err != nil || len(page) != 1 || page[0].ID != "a" {
		t.Fatalf("List: %+v, %v; want job a", page, err)
	}
	if s, err := ro.Get(ctx, "a"); err != nil || s.Status != leaseq.StatusPending || s.Qty != 1 {
		t.Fatalf("Get: %+v, %v; want pending a", s, err)
	}
	if _, err := ro.Activity(ctx, time.Now().Add(-time.Minute)); err != nil {
		t.Fatalf("Activity: %v", err)
	}
	if names, err := leaseq.Queues(ctx, db); err != nil || len(names) != 1 {
		t.Fatalf("Queues: %v, %v; want [%s]", names, err, leaseq.DefaultName)
	}
	if err := ro.Enqueue(ctx, leaseq.Job{ID: "b"}); err == nil || ctx.Err() != nil {
		t.Fatalf("Enqueue as a read-only role: %v; want the server's refusal", err)
	}
}
