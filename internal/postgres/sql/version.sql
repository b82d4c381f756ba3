-- Asks the server what it is: a PostgreSQL server answers "PostgreSQL ...".
-- PostgreSQL only: SQLite is told by its driver's type.
-- returns: version
SELECT version()
