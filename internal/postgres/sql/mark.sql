-- Marks a transaction of write for the read that finds out whether it
-- committed (committed.sql): it takes the advisory lock of the random key $1
-- until it ends, and returns its transaction ID. No other transaction holds
-- the key; were it held, the transaction would fail rather than run unmarked.
-- PostgreSQL only.
-- args: $1 mark
-- returns: transaction ID (no row: the key was held)
SELECT pg_current_xact_id()::text WHERE pg_try_advisory_xact_lock($1::bigint)
