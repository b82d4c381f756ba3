-- Whether the queue is paused (rule 54), read in a periodic slot's write
-- transaction before slot_insert: a paused queue gets no slot's job.
-- args: ?1 queue
-- returns: paused
-- SQLite: a statement of its own in the write transaction, where
-- PostgreSQL's slot_insert reads it in the insert's statement.

SELECT EXISTS (SELECT 1 FROM leaseq_paused WHERE queue = ?1)
