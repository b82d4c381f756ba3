-- Reads the file change counter (bytes 24-27 of the header), which every
-- committed write transaction advances by one, through SQLite's pager so
-- that it is read under the connection's lock: what tells whether a
-- transaction whose COMMIT failed is in the file. No row on an empty file.
-- returns: the counter's 4 bytes, big-endian
-- SQLite only.

SELECT substr(data, 25, 4) FROM sqlite_dbpage WHERE pgno = 1
