-- Reads the server's clock in Unix milliseconds (leaseq_now in schema.sql):
-- the estimate of ServerClock, and the instant of a transaction that stores
-- one of its own, read on the transaction at hand.
-- PostgreSQL only.
-- returns: now
SELECT leaseq_now()
