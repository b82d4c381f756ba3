-- Resumes the queue $1 (rule 54 in docs/rules.md): deletes its row in
-- leaseq_paused; on a running queue it matches nothing.
-- args: $1 queue
-- index: leaseq_paused_pkey
DELETE FROM leaseq_paused WHERE queue = $1
