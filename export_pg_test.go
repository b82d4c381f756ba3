package leaseq

// PGClaimSQL is the statement a PostgreSQL Claim runs in its transaction.
const PGClaimSQL = pgClaimSQL
