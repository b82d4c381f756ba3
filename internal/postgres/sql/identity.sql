-- Identifies a PostgreSQL database: its server's start time (as seconds, to
-- the microsecond, whatever the session's time zone), which two servers share
-- only if started in the same microsecond; the database's OID on that server;
-- the leaseq_jobs table the search_path finds (0 if none); and the database's
-- name. Every role may read them. (The system identifier would add a read of
-- the control file, about a third of the query's time on the server, to tell
-- apart only copies of one server started in the same microsecond.)
-- PostgreSQL: where SQLite compares main_file.sql's file names.
-- returns: identity, database name
SELECT concat_ws('/', extract(epoch FROM pg_postmaster_start_time()), d.oid,
    coalesce(to_regclass('leaseq_jobs')::oid, 0)), d.datname
FROM pg_database d WHERE d.datname = current_database()
