-- Waits for the transaction marked $1 (mark.sql) to end, then says what
-- became of the transaction $2: committed, aborted (or NULL, were it too old
-- to tell), and whether the server restarted since its start $3 (mark.sql).
-- The lock is taken in the materialized CTE, before the status is read from
-- its row.
-- PostgreSQL only: SQLite tells from its change counter.
-- args: $1 mark, $2 transaction ID, $3 server start
-- returns: status, restarted
WITH ended AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($1::bigint))
SELECT pg_xact_status($2::xid8), pg_postmaster_start_time()::text <> $3 FROM ended
