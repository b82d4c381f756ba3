-- Begins a write transaction that takes the write lock before anything is
-- read, so that no selection and update of one transaction can be split
-- (rule 1 in docs/rules.md), and a lock upgrade never fails at once with
-- SQLITE_BUSY. database/sql cannot ask for it on a plain DSN.
-- SQLite only.

BEGIN IMMEDIATE
