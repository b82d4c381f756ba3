-- Deletes one chunk of jobs of status $2 whose last change is before $3,
-- oldest first, from leaseq_jobs_finished, and remembers the ID and last
-- token of each of them (rule 21 in docs/rules.md; one never claimed too,
-- with token 0, as purge_tokens.sql of the SQLite engine says), in one
-- statement: it locks the chunk, remembers, and deletes. Two statements
-- would each see the rows as they are when it starts (READ COMMITTED), so a
-- job that ended between them would be deleted with its token forgotten, and
-- its ID enqueued again would hand out old tokens again. The parts of one
-- statement share one snapshot; the lock keeps the chunk as it is until the
-- deletion. The IN repeats the index's condition, which a bound $2 alone
-- cannot show the planner.
-- PostgreSQL: one statement where SQLite, under its write lock, runs
-- purge_tokens.sql and purge.sql.
-- args: $1 queue, $2 status, $3 before, $4 chunk size
-- index: leaseq_jobs_finished
WITH doomed AS (
    SELECT seq, queue, id, token FROM leaseq_jobs
    WHERE queue = $1 AND status = $2 AND status IN ('done', 'quarantined') AND updated_at < $3
    ORDER BY updated_at LIMIT $4
    FOR UPDATE),
remembered AS (
    INSERT INTO leaseq_purged (queue, id, token)
    SELECT queue, id, token FROM doomed
    ON CONFLICT (queue, id) DO UPDATE SET token = excluded.token)
DELETE FROM leaseq_jobs WHERE seq IN (SELECT seq FROM doomed)
