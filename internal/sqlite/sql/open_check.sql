-- Reads the schema once when Open opens a file, which makes SQLite read the
-- file's header: where "file is not a database" shows up, so that a wrong
-- path fails at Open rather than at the first call. Also the probe of
-- lockedByOther, on a connection with no busy timeout: SQLITE_BUSY at once
-- when another connection holds the file locked to write it.
-- returns: the number of schema objects
-- SQLite only.

SELECT count(*) FROM sqlite_schema
