-- Reads the connection's journal mode, to refuse one the queue does not
-- write in. The table-valued form, not "PRAGMA journal_mode": the plain
-- pragma reports the mode the connection last saw, and a pooled connection
-- opened before another one switched the file to WAL still says "delete"
-- until it reads the file again; its first write would then run in WAL.
-- Selecting from pragma_journal_mode starts a read, which reads the file's
-- header first.
-- returns: journal_mode
-- SQLite only.

SELECT journal_mode FROM pragma_journal_mode
