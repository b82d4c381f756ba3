package leaseq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// The service's SQL is written once for both engines with $1, $2
// placeholders, which both bind (docs/rules.md, rule 43). SQLite's ? is
// read by PostgreSQL as an operator: a statement through Tx that uses it
// gets an error that says so, wrapping the server's.

// sqlStater is the SQLSTATE method of PostgreSQL drivers' errors.
type sqlStater interface{ SQLState() string }

// questionMarkStatements run a statement with ? placeholders through each
// of Tx's statement methods, and return its error.
var questionMarkStatements = map[string]func(ctx context.Context, tx leaseq.Tx) error{
	"ExecContext": func(ctx context.Context, tx leaseq.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO orders (id, note) VALUES (?, ?)`, "o2", "placed")
		return err
	},
	"ExecContext ?N": func(ctx context.Context, tx leaseq.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE orders SET note = 'x' WHERE id=?1`, "o1")
		return err
	},
	"QueryContext": func(ctx context.Context, tx leaseq.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT note FROM orders WHERE id = ? AND note = ?`, "o1", "placed")
		if err == nil {
			rows.Close()
		}
		return err
	},
	"QueryRowContext": func(ctx context.Context, tx leaseq.Tx) error {
		var note string
		return tx.QueryRowContext(ctx, `SELECT note FROM orders WHERE id = ?`, "o1").Scan(&note)
	},
}

// wantPlaceholderError checks that err says PostgreSQL needs $1, $2 and
// still is the server's error, found with errors.As.
func wantPlaceholderError(t *testing.T, err error) {
	t.Helper()
	var se sqlStater
	switch {
	case err == nil:
		t.Fatal("a statement with ? placeholders: no error")
	case !strings.Contains(err.Error(), "PostgreSQL does not bind") || !strings.Contains(err.Error(), "write $1, $2"):
		t.Fatalf("error %q does not say PostgreSQL needs $1, $2 placeholders", err)
	case !errors.As(err, &se) || (se.SQLState() != "42601" && se.SQLState() != "42883"):
		t.Fatalf("error %q: errors.As finds no server error of a syntax error or unknown operator", err)
	}
}

// TestPostgresTxQuestionMarks: on PostgreSQL, a statement with ?
// placeholders through InTx's and FinishTx's tx fails with an error that
// names the placeholders to write, and wraps the server's; the call's
// function returns it and nothing of the call is written, its own $1
// statement and its job included; a FinishTx's job stays leased.
func TestPostgresTxQuestionMarks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, postgresEngine, leaseq.Options{})
	f.createOrders()
	f.enqueue(leaseq.Job{ID: "before"})
	c := f.mustClaim("w", time.Minute)
	before := f.snapshot()
	for name, stmt := range questionMarkStatements {
		err := f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error {
			if err := f.placeOrder("o1", "ship-o1")(ctx, tx); err != nil {
				return err
			}
			return stmt(ctx, tx)
		})
		wantPlaceholderError(t, err)
		f.unchanged(before, "InTx whose "+name+" had ? placeholders")
		if got := f.orders(); got != "" {
			t.Fatalf("orders %q after InTx whose %s had ? placeholders, want none", got, name)
		}
		ok, err := f.q.FinishTx(f.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
			if err := f.placeOrder("o1", "")(ctx, tx); err != nil {
				return err
			}
			return stmt(ctx, tx)
		})
		if ok {
			t.Fatalf("FinishTx whose %s had ? placeholders: accepted", name)
		}
		wantPlaceholderError(t, err)
		f.unchanged(before, "FinishTx whose "+name+" had ? placeholders")
	}
}

// TestTxDollarPlaceholders: $1, $2 placeholders bind through every
// statement method of Tx on both engines, so the service's SQL is written
// once.
func TestTxDollarPlaceholders(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		f.enqueue(leaseq.Job{ID: "j"})
		c := f.mustClaim("w", time.Minute)
		var got []string
		err := f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, note) VALUES ($1, $2), ($3, $2)`, "o1", "placed", "o2"); err != nil {
				return err
			}
			var note string
			if err := tx.QueryRowContext(ctx, `SELECT note FROM orders WHERE id = $1`, "o2").Scan(&note); err != nil {
				return err
			}
			got = append(got, note)
			rows, err := tx.QueryContext(ctx, `SELECT id FROM orders WHERE note = $2 AND id <> $1 ORDER BY id`, "o1", "placed")
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				got = append(got, id)
			}
			return rows.Err()
		})
		if err != nil || strings.Join(got, ",") != "placed,o2" || f.orders() != "o1,o2" {
			t.Fatalf("InTx with $N placeholders: %v, read %v, orders %q; want nil, [placed o2], o1,o2", err, got, f.orders())
		}
		ok, err := f.q.FinishTx(f.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE orders SET note = $1 WHERE id = $2`, "shipped", "o1")
			return err
		})
		if !ok || err != nil {
			t.Fatalf("FinishTx with $N placeholders: %v, %v", ok, err)
		}
		if got := dumpQuery(t, f.db, `SELECT id, note FROM orders ORDER BY id`); !strings.Contains(got, "id=o1 note=shipped") {
			t.Fatalf("orders after FinishTx:\n%s", got)
		}
	})
}
