-- Rolls back whatever transaction the write connection may hold, so that
-- the connection never goes back to the pool inside one.
-- SQLite only.

ROLLBACK
