-- Reads the schema version of the database (0: no leaseq schema), without
-- writing.
-- returns: user_version
-- SQLite: PRAGMA user_version, where PostgreSQL keeps a table.

PRAGMA user_version
