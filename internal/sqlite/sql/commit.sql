-- Commits the write transaction begun by begin.
-- SQLite only: PostgreSQL's transactions are database/sql's.

COMMIT
