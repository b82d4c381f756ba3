-- Whether the queue $1 is paused (rule 54 in docs/rules.md), for Stats.
-- args: $1 queue
-- returns: paused
-- index: leaseq_paused_pkey
SELECT EXISTS (SELECT 1 FROM leaseq_paused WHERE queue = $1)
