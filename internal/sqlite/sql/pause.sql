-- Pauses the queue ?1 (rule 54 in docs/rules.md): its row in leaseq_paused,
-- kept as it was when the queue is paused already, so that a second Pause
-- changes nothing.
-- args: ?1 queue, ?2 now

INSERT INTO leaseq_paused (queue, paused_at) VALUES (?1, ?2) ON CONFLICT (queue) DO NOTHING
