-- Names the file of a connection's main database: "" for an in-memory or
-- temporary one, which New refuses; and, on a caller's transaction, the file
-- that EnqueueTx compares with the queue's.
-- returns: file
-- SQLite: where PostgreSQL reads its identity.

SELECT file FROM pragma_database_list WHERE name = 'main'
