// Package postgres is leaseq's engine on PostgreSQL, through any
// database/sql driver for it (pgx's stdlib is the tested one; the package
// imports none). Where SQLite has one writer per file, PostgreSQL has many
// writers and row locks, so this engine keeps none of SQLite's transaction
// strategy: no writer's turn, no pinned connection, no group commit. Each
// single call is one statement on the *sql.DB, committed on its own; a claim,
// a batch, an operator's call and a purge chunk are one short READ
// COMMITTED transaction, and the server shares its log flushes among the
// commits that arrive together. A fenced call is one UPDATE whose WHERE is
// the whole fence, which PostgreSQL evaluates again on the newest version
// of a row it waited for, so READ COMMITTED is enough for the fence. Claims
// run in server-side functions (sql/schema.sql) and take rows with FOR
// UPDATE SKIP LOCKED under advisory try-locks, so that claimers never wait
// for each other or for a finish (rule 39 in docs/rules.md). Time is the
// server's clock (leaseq_now) unless the Queue has a Clock of its own, so
// that hosts whose clocks disagree still agree on when a lease ends (rule
// 40). A worker pool's cycle — its handlers' finishes and the claim that
// refills their slots — is one statement (cycle.go). A call whose context ends
// while its statement runs finds out what the server did (write.go,
// outcome.go) rather than guess.
//
// What it does worse: every call is at least one round trip to a server,
// so a single Claim or Finish takes far longer than on SQLite, and single
// calls outside a worker pool are not gathered: each pays a commit of its
// own. A pool's releases, fails and snoozes are written apart from its
// cycle, one transaction per cycle's worth, and so is a finish whose row
// another transaction holds. Counts of done and quarantined jobs are kept by triggers, in rows
// per backend that Stats adds up, which every finish pays for. The schema
// holds functions and triggers, so creating or upgrading it needs CREATE
// rights (a current one needs only DML). And a fenced call whose answer
// was cut short is judged from its row, which cannot tell the call from an
// earlier repeat of it by the same claim.
package postgres
