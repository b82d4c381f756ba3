package leaseq_test

import "bytes"

// seedBuilder writes FuzzQueueModel inputs operation by operation, so the
// seed corpus reads as scenarios rather than bytes. Arguments are indexes
// into fuzzIDs, fuzzOwners, fuzzLeases and the run's list of claims.
type seedBuilder struct{ b []byte }

// Indexes into the fuzz tables, named for the seeds below.
const (
	idJ0, idJ1, idJ2, idJ3, idSQL, idUnicode, idWildcards, id255, id256, idEmpty, idBadUTF8, idNUL = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
	ownA, ownB, ownC, ownSQL, ownUnicode, own255, own256, ownEmpty, ownBadUTF8, ownNUL             = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
	lease0, leaseHalfMS, lease1ms, lease2ms, lease10ms, lease100ms, lease1s, lease1h               = 0, 1, 2, 3, 4, 5, 6, 7
)

// Special values of enqueue's arguments.
const (
	qtyNegative    = 255
	maxDefault     = 0
	maxNegative    = 5
	noDeadline     = 0
	deadlineAtNow  = 130 // now + 0ms
	deadline10ms   = 131
	deadlinePast   = 128 // now - 20ms
	deadline100ms  = 140
	deadline1250ms = 255
)

func seed(phase byte) *seedBuilder { return &seedBuilder{b: []byte{phase}} }

func (s *seedBuilder) op(code int, args ...byte) *seedBuilder {
	s.b = append(append(s.b, byte(code)), args...)
	return s
}

// job is one job's bytes as decodeJob reads them.
func job(id int, qty byte, max int, deadline byte, payload []byte) []byte {
	return append([]byte{byte(id), qty, byte(max), deadline, byte(len(payload))}, payload...)
}

func (s *seedBuilder) enqueue(id int, qty byte, max int, deadline byte, payload []byte) *seedBuilder {
	return s.op(opEnqueue, job(id, qty, max, deadline, payload)...)
}

// enqueueBatch enqueues jobs (each made by job) in one EnqueueBatch.
func (s *seedBuilder) enqueueBatch(jobs ...[]byte) *seedBuilder {
	args := []byte{byte(len(jobs))}
	for _, j := range jobs {
		args = append(args, j...)
	}
	return s.op(opEnqueueBatch, args...)
}

// claimBatch claims up to max (-1..6) jobs in one ClaimBatch.
func (s *seedBuilder) claimBatch(owner, lease, max int) *seedBuilder {
	return s.op(opClaimBatch, byte(owner), byte(lease), byte(max+1))
}

// finishBatch finishes, in one FinishBatch, the claims given as pairs of a
// claim number and a forgery (as in finishAny).
func (s *seedBuilder) finishBatch(pairs ...[2]int) *seedBuilder {
	args := []byte{byte(len(pairs))}
	for _, p := range pairs {
		args = append(args, byte(p[0]), byte(p[1]))
	}
	return s.op(opFinishBatch, args...)
}
func (s *seedBuilder) requeue(id int) *seedBuilder { return s.op(opRequeue, byte(id)) }
func (s *seedBuilder) claim(owner, lease int) *seedBuilder {
	return s.op(opClaim, byte(owner), byte(lease))
}
func (s *seedBuilder) finishLast() *seedBuilder { return s.op(opFinishLast) }

// finishAny finishes claim number i (in the order they were handed out),
// forged by how (see forge: 0 unchanged, 1 token+1, 2 token-1, 3 owner, 4
// ID, 5 token 0, 6 empty owner, 7 empty ID, 8 zero claim, 9 lease_until).
func (s *seedBuilder) finishAny(i, how int) *seedBuilder {
	return s.op(opFinishAny, byte(i), byte(how))
}
func (s *seedBuilder) get(id int) *seedBuilder      { return s.op(opGet, byte(id)) }
func (s *seedBuilder) advance(ms int) *seedBuilder  { return s.op(opAdvance, byte(ms+8)) }
func (s *seedBuilder) long(n100ms int) *seedBuilder { return s.op(opAdvanceLong, byte(n100ms)) }
func (s *seedBuilder) micro(n37us int) *seedBuilder { return s.op(opAdvanceMicro, byte(n37us)) }

// toLeaseEnd sets the clock to claim i's lease_until plus delta (-1, 0, 1)
// milliseconds.
func (s *seedBuilder) toLeaseEnd(i, delta int) *seedBuilder {
	return s.op(opToLeaseEnd, byte(i), byte(delta+1))
}
func (s *seedBuilder) toDeadline(id, delta int) *seedBuilder {
	return s.op(opToDeadline, byte(id), byte(delta+1))
}
func (s *seedBuilder) checkAll() *seedBuilder { return s.op(opCheckAll) }

type fuzzSeed struct {
	name  string
	input []byte
}

// fuzzSeeds is the corpus: one scenario per SPEC rule and error row.
func fuzzSeeds() []fuzzSeed {
	full := bytes.Repeat([]byte{0, 'x', 0xff, '\''}, fuzzMaxPayload/4)
	seeds := []struct {
		name string
		s    *seedBuilder
	}{
		// The SPEC timeline: 0ms A claims, 999ms B gets nothing, 1000ms B
		// claims token 2, 1001ms A's finish is refused and B's accepted.
		{"timeline", seed(0).enqueue(idJ0, 3, maxDefault, noDeadline, nil).claim(ownA, lease1s).
			toLeaseEnd(0, -1).claim(ownB, lease1s).toLeaseEnd(0, 0).claim(ownB, lease1s).
			toLeaseEnd(0, 1).finishAny(0, 0).get(idJ0).finishLast().checkAll()},
		// Rule 1: claims take pending jobs and expired leases; with nothing
		// claimable ok is false.
		{"rule1-claim", seed(0).claim(ownA, lease10ms).enqueue(idJ0, 1, maxDefault, noDeadline, nil).
			enqueue(idJ1, 2, maxDefault, noDeadline, nil).claim(ownA, lease10ms).claim(ownB, lease10ms).
			claim(ownC, lease10ms).advance(10).claim(ownC, lease10ms).claim(ownC, lease10ms).checkAll()},
		// Rule 2: a live lease is never handed over, however often Claim is
		// called.
		{"rule2-live-lease", seed(0).enqueue(idJ0, 1, 4, noDeadline, nil).claim(ownA, lease100ms).
			claim(ownB, lease100ms).claim(ownA, lease100ms).advance(50).claim(ownC, lease1h).
			toLeaseEnd(0, -1).claim(ownB, lease1s).claim(ownB, lease1s).get(idJ0).checkAll()},
		// Rule 3: only the exact current claim finishes the job; every
		// forgery is refused and changes nothing, malformed ones are
		// ErrInvalid; a second finish is refused.
		{"rule3-fence", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).claim(ownA, lease1s).
			finishAny(0, 1).finishAny(0, 2).finishAny(0, 3).finishAny(0, 4).finishAny(0, 5).
			finishAny(0, 6).finishAny(0, 7).finishAny(0, 8).finishAny(0, 9).get(idJ0).
			finishLast().finishLast().checkAll()},
		// Rule 3 with a restarted worker: the same owner name with the old
		// token is refused.
		{"rule3-same-owner-stale", seed(0).enqueue(idJ0, 1, 3, noDeadline, nil).claim(ownA, lease10ms).
			toLeaseEnd(0, 0).claim(ownA, lease10ms).finishAny(0, 0).finishAny(1, 2).finishLast().checkAll()},
		// Rule 4: the lease boundary, before, at and after.
		{"rule4-lease-before", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).claim(ownA, lease100ms).
			toLeaseEnd(0, -1).finishLast().checkAll()},
		{"rule4-lease-at", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).claim(ownA, lease100ms).
			toLeaseEnd(0, 0).finishLast().claim(ownB, lease100ms).checkAll()},
		{"rule4-lease-after", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).claim(ownA, lease100ms).
			toLeaseEnd(0, 1).finishLast().claim(ownB, lease100ms).finishLast().checkAll()},
		// Rule 4: the deadline boundary, before, at and after.
		{"rule4-deadline-before", seed(0).enqueue(idJ0, 1, maxDefault, deadline100ms, nil).claim(ownA, lease1s).
			toDeadline(idJ0, -1).finishLast().checkAll()},
		{"rule4-deadline-at", seed(0).enqueue(idJ0, 1, maxDefault, deadline100ms, nil).claim(ownA, lease1s).
			toDeadline(idJ0, 0).finishLast().claim(ownB, lease1s).checkAll()},
		{"rule4-deadline-after", seed(0).enqueue(idJ0, 1, maxDefault, deadline100ms, nil).claim(ownA, lease10ms).
			toDeadline(idJ0, 1).finishLast().claim(ownB, lease1s).checkAll()},
		// Rule 5: deadline=100, now=0, lease=1000 → lease_until=100; a short
		// lease is not stretched.
		{"rule5-lease-capped", seed(0).enqueue(idJ0, 1, maxDefault, deadline100ms, nil).claim(ownA, lease1s).
			get(idJ0).enqueue(idJ1, 1, maxDefault, deadline100ms, nil).claim(ownB, lease10ms).checkAll()},
		// Rule 6: attempts used up and lease expired → quarantined before a
		// token is issued; never claimed again.
		{"rule6-max-attempts", seed(0).enqueue(idJ0, 1, 1, noDeadline, nil).claim(ownA, lease10ms).
			toLeaseEnd(0, -1).claim(ownB, lease10ms).toLeaseEnd(0, 0).claim(ownB, lease10ms).get(idJ0).
			long(50).claim(ownC, lease10ms).finishAny(0, 0).checkAll()},
		// Rule 6: the queue's default (2 in the fuzz queue) applies to jobs
		// that set none.
		{"rule6-default-max", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).claim(ownA, lease10ms).
			advance(10).claim(ownA, lease10ms).advance(10).claim(ownA, lease10ms).get(idJ0).checkAll()},
		// Rule 6: a pending job whose deadline passed, and a leased one.
		{"rule6-deadline-pending", seed(0).enqueue(idJ0, 1, maxDefault, deadline100ms, nil).
			toDeadline(idJ0, -1).get(idJ0).toDeadline(idJ0, 0).claim(ownA, lease10ms).get(idJ0).checkAll()},
		{"rule6-deadline-leased", seed(0).enqueue(idJ0, 1, 4, deadline100ms, nil).claim(ownA, lease10ms).
			toDeadline(idJ0, 0).claim(ownB, lease10ms).get(idJ0).finishAny(0, 0).checkAll()},
		// Rule 8: instants between milliseconds are truncated: the clock
		// starts 765µs into a millisecond and moves by 37µs steps.
		{"rule8-truncation", seed(255).enqueue(idJ0, 1, maxDefault, deadline100ms, nil).micro(7).
			claim(ownA, lease10ms).micro(255).advance(9).finishLast().micro(30).claim(ownB, lease2ms).
			micro(20).finishLast().checkAll()},
		// A clock that steps back: leases and the fence follow it.
		{"clock-backwards", seed(0).long(5).enqueue(idJ0, 1, 3, noDeadline, nil).claim(ownA, lease10ms).
			advance(-8).advance(-8).finishLast().advance(30).claim(ownB, lease10ms).advance(-8).advance(-8).
			claim(ownC, lease10ms).finishAny(0, 0).checkAll()},
		// Errors: every invalid Enqueue, and duplicates in each state.
		{"errors-enqueue", seed(0).enqueue(idEmpty, 1, maxDefault, noDeadline, nil).
			enqueue(id256, 1, maxDefault, noDeadline, nil).enqueue(idBadUTF8, 1, maxDefault, noDeadline, nil).
			enqueue(idNUL, 1, maxDefault, noDeadline, nil).enqueue(idJ0, qtyNegative, maxDefault, noDeadline, nil).
			enqueue(idJ0, 1, maxNegative, noDeadline, nil).enqueue(idJ0, 1, maxDefault, deadlineAtNow, nil).
			enqueue(idJ0, 1, maxDefault, deadlinePast, nil).enqueue(idJ0, 1, maxDefault, noDeadline, append(full, 1)).
			checkAll()},
		{"errors-duplicate", seed(0).enqueue(idJ0, 1, 1, noDeadline, nil).enqueue(idJ0, 2, maxDefault, noDeadline, nil).
			claim(ownA, lease10ms).enqueue(idJ0, 3, maxDefault, noDeadline, nil).finishLast().
			enqueue(idJ0, 4, maxDefault, noDeadline, nil).enqueue(idJ1, 1, 1, noDeadline, nil).claim(ownA, lease10ms).
			advance(10).claim(ownA, lease10ms).enqueue(idJ1, 5, maxDefault, noDeadline, nil).checkAll()},
		{"errors-claim", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).claim(ownEmpty, lease1s).
			claim(own256, lease1s).claim(ownBadUTF8, lease1s).claim(ownNUL, lease1s).claim(ownA, lease0).
			claim(ownA, leaseHalfMS).get(idJ0).get(idJ1).checkAll()},
		// Hostile names and payloads: quotes, SQL, unicode, wildcards, 255
		// bytes, NULs, a payload exactly at the limit — stored byte for byte.
		{"hostile", seed(0).enqueue(idSQL, 1, maxDefault, noDeadline, full).
			enqueue(idUnicode, 2, maxDefault, noDeadline, []byte{0}).enqueue(idWildcards, 3, maxDefault, noDeadline, nil).
			enqueue(id255, 4, maxDefault, noDeadline, []byte("\x00a\x00")).claim(ownSQL, lease1s).finishLast().
			claim(ownUnicode, lease1s).claim(own255, lease1s).finishLast().claim(ownA, lease1s).get(idSQL).
			get(idWildcards).checkAll()},
		// Several jobs, workers and stale finishes interleaved.
		{"mixed", seed(17).enqueue(idJ0, 1, 3, noDeadline, nil).enqueue(idJ1, 2, maxDefault, deadline1250ms, []byte("p")).
			enqueue(idJ2, 3, 1, noDeadline, nil).claim(ownA, lease100ms).claim(ownB, lease10ms).claim(ownC, lease1s).
			advance(10).claim(ownA, lease100ms).finishAny(1, 0).finishLast().toLeaseEnd(0, 0).claim(ownB, lease1h).
			finishAny(0, 0).long(13).claim(ownC, lease10ms).finishAny(2, 0).checkAll()},
		// FinishBatch: each claim fenced on its own at one instant — a stale
		// claim among fresh ones is refused alone; the same claim twice is
		// accepted once; a malformed claim anywhere refuses the whole batch
		// and writes nothing; an empty batch does nothing.
		{"batch-finish-stale", seed(0).enqueueBatch(job(idJ0, 1, 3, noDeadline, nil), job(idJ1, 2, maxDefault, noDeadline, nil),
			job(idJ2, 3, maxDefault, noDeadline, nil)).claim(ownA, lease10ms).toLeaseEnd(0, 0).
			claimBatch(ownB, lease1s, 3).finishBatch([2]int{1, 0}, [2]int{3, 8}).get(idJ0).
			finishBatch([2]int{0, 0}, [2]int{1, 0}, [2]int{2, 1}, [2]int{2, 0}).
			finishBatch([2]int{3, 0}, [2]int{3, 0}).finishBatch().finishBatch([2]int{0, 0}).checkAll()},
		// EnqueueBatch is all or nothing: a duplicate within the batch, one
		// already stored, or one invalid job writes nothing; an empty batch
		// does nothing.
		{"batch-enqueue-duplicate", seed(0).enqueueBatch(job(idJ0, 1, maxDefault, noDeadline, nil),
			job(idJ1, 2, maxDefault, noDeadline, []byte("a")), job(idJ0, 3, maxDefault, noDeadline, nil)).checkAll().
			enqueueBatch(job(idJ0, 1, maxDefault, noDeadline, nil), job(idJ1, 2, 1, deadline100ms, []byte("a"))).
			enqueueBatch(job(idJ2, 1, maxDefault, noDeadline, nil), job(idJ1, 5, maxDefault, noDeadline, nil)).
			enqueueBatch(job(idJ2, 1, maxDefault, noDeadline, nil), job(idEmpty, 1, maxDefault, noDeadline, nil)).
			enqueueBatch(job(idJ3, 1, maxDefault, deadlineAtNow, nil), job(idJ0, 1, maxDefault, noDeadline, nil)).
			enqueueBatch().get(idJ2).get(idJ1).checkAll()},
		// ClaimBatch runs rule 6's sweep before any token (an expired lease
		// with its attempts used up, a pending job past its deadline) and
		// rule 5's cap on each lease; it takes at most max; invalid max,
		// owner or lease change nothing; with nothing claimable it is empty.
		{"batch-claim-quarantine", seed(0).enqueue(idJ0, 1, 1, noDeadline, nil).claim(ownA, lease10ms).
			enqueueBatch(job(idJ1, 1, maxDefault, deadline100ms, nil), job(idJ2, 2, maxDefault, deadline10ms, nil),
				job(idJ3, 3, maxDefault, noDeadline, nil), job(idSQL, 4, maxDefault, noDeadline, nil)).
			advance(10).claimBatch(ownB, lease1s, 0).claimBatch(ownB, lease1s, -1).claimBatch(ownEmpty, lease1s, 2).
			claimBatch(ownB, lease0, 2).get(idJ0).claimBatch(ownB, lease1s, 2).get(idJ0).get(idJ2).get(idJ1).
			claimBatch(ownC, lease1s, 6).claimBatch(ownC, lease1s, 6).toDeadline(idJ1, 0).claimBatch(ownA, lease10ms, 6).
			checkAll()},
		// Requeue is the only way out of quarantine: pending again with
		// attempts reset, and the next claim gets token+1. Unknown IDs are
		// ErrNotFound; a job that is not quarantined, or whose deadline has
		// passed, is ErrInvalid and unchanged.
		{"requeue", seed(0).enqueue(idJ0, 1, 1, noDeadline, nil).enqueue(idJ1, 2, 2, deadline100ms, nil).
			requeue(idJ0).claim(ownA, lease10ms).requeue(idJ0).advance(10).claim(ownB, lease10ms).advance(10).
			claim(ownB, lease10ms).get(idJ0).requeue(idJ2).requeue(idEmpty).requeue(idJ0).get(idJ0).requeue(idJ0).
			claim(ownC, lease1s).finishLast().requeue(idJ0).toDeadline(idJ1, 0).claim(ownC, lease1s).get(idJ1).
			requeue(idJ1).toDeadline(idJ1, -1).requeue(idJ1).claimBatch(ownA, lease1s, 2).finishLast().checkAll()},
	}
	out := make([]fuzzSeed, len(seeds))
	for i, s := range seeds {
		out[i] = fuzzSeed{s.name, s.s.b}
	}
	return out
}
