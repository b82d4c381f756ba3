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

// extendBatch renews, in one ExtendBatch with one lease, the claims given
// as pairs of a claim number and a forgery (as in finishAny); at most 7.
func (s *seedBuilder) extendBatch(lease int, pairs ...[2]int) *seedBuilder {
	args := []byte{byte(lease), byte(len(pairs))}
	for _, p := range pairs {
		args = append(args, byte(p[0]), byte(p[1]))
	}
	return s.op(opExtendBatch, args...)
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

// Arguments of the lifecycle operations: indexes into fuzzPriorities,
// fuzzReasons, fuzzPurges, fuzzStatuses and fuzzListLimits, and the codes
// of decodeRunAt and decodeDelay.
const (
	prioUnder, prioMin, prioMinus1, prio0, prio1, prio5, prioMax, prioOver = 0, 1, 2, 3, 4, 5, 6, 7

	runNone, runPast, runNow, run1ms, run10ms, run100ms, run1s, runBeforeDeadline, runAtDeadline, runBetweenMS = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9

	delay0, delay999us, delay1ms, delay10ms, delay100ms, delay1s, delay1h, delayNegative = 0, 1, 2, 3, 4, 5, 6, 7
	delayBeforeDeadline, delayAtDeadline, delayAfterDeadline, delay1500us                = 8, 9, 10, 11

	rsEmpty, rsTimeout, rsSQL, rs1KiB, rsOver1KiB, rsCutE, rsCutCJK, rsCutFFFD, rsBadByte, rsNUL, rsNULOnly, rsNULsTo1KiB, rsJapanese = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12

	purgeDefault, purgeDone, purgeQuarantined, purgeBoth, purgeRepeat, purgePending, purgeDoneLeased, purgeBogus = 0, 1, 2, 3, 4, 5, 6, 7

	listAll, listPending, listLeased, listDone, listQuarantined, listBogus = 0, 1, 2, 3, 4, 5
	limDefault, lim1, lim2, lim3, limNegative, limMax, limOver             = 0, 1, 2, 3, 4, 5, 6
	noAfter                                                                = -1
)

// Forgeries (see forge), and the claim number that means the most recent.
const (
	asIssued, tokenUp, tokenDown, otherOwner, otherID, tokenZero, emptyOwner, emptyID, zeroClaim, fieldsChanged, otherQueue = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
	noQueue, noQueueOtherQueue                                                                                              = 11, 12

	last = 128
)

// jobFull is one job's bytes as decodeJob reads them with run_at and
// priority.
func jobFull(id int, qty byte, max int, deadline byte, payload []byte, runAt, prio int) []byte {
	return append(job(id, qty, max, deadline, payload), byte(runAt), byte(prio))
}

func (s *seedBuilder) enqueueFull(id int, qty byte, max int, deadline byte, runAt, prio int) *seedBuilder {
	return s.op(opEnqueueFull, jobFull(id, qty, max, deadline, nil, runAt, prio)...)
}

// enqueueBatchFull enqueues jobs (each made by jobFull) in one EnqueueBatch.
func (s *seedBuilder) enqueueBatchFull(jobs ...[]byte) *seedBuilder {
	args := []byte{byte(len(jobs))}
	for _, j := range jobs {
		args = append(args, j...)
	}
	return s.op(opEnqueueBatchFull, args...)
}

// enqueueTx runs two EnqueueTx calls (jobs made by jobFull; at most 3 and
// 2) in one transaction, then commits it or rolls it back.
func (s *seedBuilder) enqueueTx(commit bool, first, second [][]byte) *seedBuilder {
	args := []byte{1}
	if commit {
		args[0] = 0
	}
	for _, jobs := range [][][]byte{first, second} {
		args = append(args, byte(len(jobs)))
		for _, j := range jobs {
			args = append(args, j...)
		}
	}
	return s.op(opEnqueueTx, args...)
}

// inTx runs two tx.Enqueue calls (jobs made by jobFull; at most 3 and 2)
// in one InTx, whose function then returns nil or, with fail, an error.
func (s *seedBuilder) inTx(fail bool, first, second [][]byte) *seedBuilder {
	args := []byte{0}
	if fail {
		args[0] = 1
	}
	for _, jobs := range [][][]byte{first, second} {
		args = append(args, byte(len(jobs)))
		for _, j := range jobs {
			args = append(args, j...)
		}
	}
	return s.op(opInTx, args...)
}

// finishTx runs FinishTx on claim number i (or last), forged by how, with
// a function that enqueues j (made by jobFull) and returns nil or, with
// fail, an error.
func (s *seedBuilder) finishTx(i, how int, fail bool, j []byte) *seedBuilder {
	f := byte(0)
	if fail {
		f = 1
	}
	return s.op(opFinishTx, append([]byte{byte(i), byte(how), f}, j...)...)
}

func (s *seedBuilder) useQueue(i int) *seedBuilder { return s.op(opUseQueue, byte(i)) }

// extend, release and fail act on claim number i (or last), forged by how.
func (s *seedBuilder) extend(i, how, lease int) *seedBuilder {
	return s.op(opExtend, byte(i), byte(how), byte(lease))
}
func (s *seedBuilder) release(i, how, delay, reason int) *seedBuilder {
	return s.op(opRelease, byte(i), byte(how), byte(delay), byte(reason))
}
func (s *seedBuilder) snooze(i, how, delay, reason int) *seedBuilder {
	return s.op(opSnooze, byte(i), byte(how), byte(delay), byte(reason))
}
func (s *seedBuilder) fail(i, how, reason int) *seedBuilder {
	return s.op(opFail, byte(i), byte(how), byte(reason))
}
func (s *seedBuilder) cancel(id, reason int) *seedBuilder {
	return s.op(opCancel, byte(id), byte(reason))
}

// purgeNow purges statuses last changed before now + delta (-1, 0, 1) ms.
func (s *seedBuilder) purgeNow(statuses, delta int) *seedBuilder {
	return s.op(opPurge, byte(statuses), 0, byte(delta+1))
}

// purgeUpdated purges statuses last changed before job id's last change +
// delta (-1, 0, 1) ms.
func (s *seedBuilder) purgeUpdated(statuses, id, delta int) *seedBuilder {
	return s.op(opPurge, byte(statuses), 1, byte(id), byte(delta+1))
}
func (s *seedBuilder) purgeLater(statuses int) *seedBuilder { return s.op(opPurge, byte(statuses), 2) }
func (s *seedBuilder) purgeZero(statuses int) *seedBuilder  { return s.op(opPurge, byte(statuses), 3) }
func (s *seedBuilder) stats() *seedBuilder                  { return s.op(opStats) }

// list asks for a page: a status, the ID to start after (noAfter: from the
// start), a limit.
func (s *seedBuilder) list(status, after, limit int) *seedBuilder {
	return s.op(opList, byte(status), byte(after+1), byte(limit))
}
func (s *seedBuilder) toRunAt(id, delta int) *seedBuilder {
	return s.op(opToRunAt, byte(id), byte(delta+1))
}

type fuzzSeed struct {
	name  string
	input []byte
}

// fuzzSeeds is the corpus: one scenario per rule in docs/rules.md
// and per row of its error tables.
func fuzzSeeds() []fuzzSeed {
	full := bytes.Repeat([]byte{0, 'x', 0xff, '\''}, fuzzMaxPayload/4)
	seeds := []struct {
		name string
		s    *seedBuilder
	}{
		// README's timeline: 0ms A claims, 999ms B gets nothing, 1000ms B
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
		// Rule 14: two queues on one database are independent. The same ID
		// lives in both; a claim of one queue sent to the other is refused;
		// Cancel, Requeue, Purge, ClaimBatch, Stats and List see only their
		// own queue's jobs, and so does a Claim's quarantine sweep; each
		// queue keeps its own MaxAttempts.
		{"rule14-two-queues", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).enqueue(idJ1, 2, maxDefault, noDeadline, nil).
			useQueue(1).enqueue(idJ0, 7, maxDefault, noDeadline, []byte("q1")).enqueue(idJ0, 8, maxDefault, noDeadline, nil).
			enqueue(idJ2, 9, maxDefault, noDeadline, nil).claim(ownB, lease1s).useQueue(0).claim(ownA, lease1s).
			finishAny(0, otherQueue).extend(0, otherQueue, lease1h).release(0, otherQueue, delay0, rsTimeout).
			fail(0, otherQueue, rsTimeout).get(idJ0).stats().useQueue(1).stats().list(listPending, noAfter, limDefault).
			list(listLeased, noAfter, limDefault).cancel(idJ1, rsTimeout).
			requeue(idJ1).finishAny(1, otherQueue).purgeLater(purgeBoth).useQueue(0).finishLast().
			useQueue(1).purgeLater(purgeBoth).list(listAll, noAfter, limDefault).useQueue(0).purgeLater(purgeDefault).
			useQueue(1).finishAny(0, asIssued).claimBatch(ownC, lease1s, 6).list(listAll, idJ0, limDefault).
			enqueueFull(idSQL, 1, 1, noDeadline, runNone, prio5).claim(ownA, lease10ms).
			enqueue(idJ3, 1, maxDefault, deadline10ms, nil).useQueue(0).advance(10).claim(ownB, lease1s).get(idSQL).
			get(idJ3).useQueue(1).claim(ownC, lease1s).checkAll()},
		// Rule 15: a delayed job is not claimable before its run_at, is at
		// it, and after it; a run_at in the past or now is at once.
		{"rule15-run-at-before", seed(0).enqueueFull(idJ0, 1, maxDefault, noDeadline, run10ms, prio0).
			claim(ownA, lease1s).toRunAt(idJ0, -1).stats().claim(ownA, lease1s).claimBatch(ownA, lease1s, 6).
			get(idJ0).checkAll()},
		{"rule15-run-at-at", seed(0).enqueueFull(idJ0, 1, maxDefault, noDeadline, run10ms, prio0).
			enqueueFull(idJ1, 2, maxDefault, noDeadline, runPast, prio0).enqueueFull(idJ2, 3, maxDefault, noDeadline, runNow, prio0).
			stats().claimBatch(ownA, lease1s, 6).toRunAt(idJ0, 0).stats().claim(ownB, lease1s).checkAll()},
		{"rule15-run-at-after", seed(200).enqueueFull(idJ0, 1, maxDefault, noDeadline, runBetweenMS, prio0).
			enqueueFull(idJ1, 2, maxDefault, noDeadline, run1s, prio0).toRunAt(idJ0, 1).stats().claim(ownA, lease1s).
			toRunAt(idJ1, 1).claim(ownB, lease1s).claim(ownC, lease1s).checkAll()},
		// Rule 15: run_at at or after the deadline is ErrInvalid (alone or
		// in a batch); just before it the job is claimable for 1 ms, with
		// its lease capped at the deadline.
		{"rule15-run-at-deadline", seed(0).enqueueFull(idJ0, 1, maxDefault, deadline100ms, runAtDeadline, prio0).
			enqueueFull(idJ1, 1, maxDefault, deadline100ms, runBeforeDeadline, prio0).
			enqueueBatchFull(jobFull(idJ2, 1, maxDefault, deadline100ms, nil, runAtDeadline, prio0),
				jobFull(idJ3, 1, maxDefault, noDeadline, nil, runNone, prio0)).
			toRunAt(idJ1, -1).claim(ownA, lease1s).toRunAt(idJ1, 0).claim(ownA, lease1s).toDeadline(idJ1, 0).
			finishLast().claim(ownB, lease1s).checkAll()},
		// Rule 16: the highest priority first, whatever the enqueue order;
		// a batch takes the highest ones in priority order; priorities
		// outside -100..100 are ErrInvalid, alone or in a batch.
		{"rule16-priority", seed(0).enqueueBatchFull(jobFull(idJ0, 1, maxDefault, noDeadline, nil, runNone, prio0),
			jobFull(idJ1, 2, maxDefault, noDeadline, nil, runNone, prio5), jobFull(idJ2, 3, maxDefault, noDeadline, nil, runNone, prioMax),
			jobFull(idJ3, 4, maxDefault, noDeadline, nil, runNone, prioMinus1), jobFull(idSQL, 5, maxDefault, noDeadline, nil, runNone, prioMin)).
			enqueueFull(idUnicode, 1, maxDefault, noDeadline, runNone, prioOver).
			enqueueFull(idWildcards, 1, maxDefault, noDeadline, runNone, prioUnder).
			enqueueBatchFull(jobFull(idUnicode, 1, maxDefault, noDeadline, nil, runNone, prio1),
				jobFull(idWildcards, 1, maxDefault, noDeadline, nil, runNone, prioOver)).
			claim(ownA, lease1s).claimBatch(ownB, lease1s, 2).claim(ownC, lease1s).claim(ownA, lease1s).
			claim(ownA, lease1s).checkAll()},
		// Rule 16 with leases and delays: an ended lease of higher priority
		// goes before a pending job of lower; a delayed job of the highest
		// priority waits until its run_at and then goes first.
		{"rule16-priority-expired-lease", seed(0).enqueueFull(idJ0, 1, 4, noDeadline, runNone, prio5).claim(ownA, lease10ms).
			enqueueFull(idJ1, 2, 4, noDeadline, runNone, prio0).enqueueFull(idJ2, 3, 4, noDeadline, run100ms, prioMax).
			claim(ownB, lease1s).enqueueFull(idJ3, 4, 4, noDeadline, runNone, prio1).toLeaseEnd(0, 0).
			claim(ownC, lease1s).enqueueFull(idSQL, 5, 4, noDeadline, runNone, prio1).toRunAt(idJ2, -1).
			claim(ownA, lease1s).toRunAt(idJ2, 0).stats().claim(ownA, lease1s).claim(ownB, lease1s).checkAll()},
		// Rule 17: Extend is capped at the deadline; 1 ms before the
		// deadline it still succeeds (and ends at the deadline), at the
		// deadline it is refused; the original lease end no longer counts.
		{"rule17-extend-cap", seed(0).enqueue(idJ0, 1, maxDefault, deadline100ms, nil).claim(ownA, lease10ms).
			extend(last, asIssued, lease1h).toLeaseEnd(0, 0).claim(ownB, lease1s).toDeadline(idJ0, -1).
			extend(last, asIssued, lease1s).toDeadline(idJ0, 0).extend(last, asIssued, lease1s).finishLast().
			claim(ownB, lease1s).checkAll()},
		// Rule 17: Extend counts from now, so it can shorten a lease; the
		// new end is exact (before: live, at: over); a lease under 1 ms is
		// ErrInvalid; a stale claim cannot extend the new holder's lease.
		{"rule17-extend-shorten", seed(0).enqueue(idJ0, 1, 3, noDeadline, nil).claim(ownA, lease1s).advance(5).
			extend(last, asIssued, lease1ms).toLeaseEnd(1, -1).claim(ownB, lease1s).extend(1, asIssued, lease0).
			extend(1, asIssued, leaseHalfMS).toLeaseEnd(1, 0).extend(1, asIssued, lease1s).claim(ownB, lease1s).
			extend(0, asIssued, lease1h).extend(1, asIssued, lease1h).extend(last, asIssued, lease2ms).
			toLeaseEnd(3, -1).finishLast().toLeaseEnd(3, 1).claim(ownC, lease1s).checkAll()},
		// Rule 17: Extend is fenced like Finish: every forgery is refused
		// or ErrInvalid and changes nothing; fields the fence ignores do
		// not matter.
		{"rule17-extend-fence", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).claim(ownA, lease1s).
			extend(0, tokenUp, lease1s).extend(0, tokenDown, lease1s).extend(0, otherOwner, lease1s).
			extend(0, otherID, lease1s).extend(0, tokenZero, lease1s).extend(0, emptyOwner, lease1s).
			extend(0, emptyID, lease1s).extend(0, zeroClaim, lease1s).extend(0, otherQueue, lease1s).
			extend(0, fieldsChanged, lease100ms).get(idJ0).extend(last, asIssued, lease10ms).checkAll()},
		// Rule 18: Release with a delay: pending, claimable from now +
		// delay (before, at), the token kept so the next claim gets +1; a
		// negative delay is ErrInvalid, a delay under 1 ms is none; a
		// stale or late Release is refused.
		{"rule18-release-delay", seed(0).enqueue(idJ0, 1, 3, noDeadline, nil).claim(ownA, lease1s).
			release(last, asIssued, delayNegative, rsTimeout).release(last, tokenUp, delay100ms, rsTimeout).
			release(last, asIssued, delay100ms, rsTimeout).release(last, asIssued, delay0, rsEmpty).
			claim(ownB, lease1s).stats().toRunAt(idJ0, -1).claim(ownB, lease1s).toRunAt(idJ0, 0).claim(ownB, lease1s).
			release(last, asIssued, delay999us, rsSQL).claim(ownC, lease10ms).finishAny(1, asIssued).
			toLeaseEnd(2, 0).release(2, asIssued, delay0, rsEmpty).checkAll()},
		// Rule 18: a delay that lands 1 ms before the deadline leaves the
		// job pending (claimable for its last millisecond); one landing on
		// or after the deadline quarantines it at once, and Release still
		// returns true.
		{"rule18-release-delay-at-deadline", seed(0).enqueueBatch(job(idJ0, 1, 3, deadline100ms, nil),
			job(idJ1, 2, 3, deadline100ms, nil), job(idJ2, 3, 3, deadline100ms, nil), job(idJ3, 4, 3, deadline100ms, nil)).
			claimBatch(ownA, lease1s, 4).advance(5).release(0, asIssued, delayBeforeDeadline, rsTimeout).
			release(1, asIssued, delayAtDeadline, rsTimeout).release(2, asIssued, delayAfterDeadline, rsTimeout).
			release(3, asIssued, delay1h, rsSQL).toRunAt(idJ0, -1).claim(ownB, lease1s).toRunAt(idJ0, 0).
			claim(ownB, lease1s).stats().toDeadline(idJ0, 0).claim(ownC, lease1s).checkAll()},
		// Rule 18: with the attempts used up a Release quarantines at once
		// with a reason that holds the text given (cut at 1 KiB if need
		// be); with attempts left the job is pending again.
		{"rule18-release-attempts-used", seed(0).enqueue(idJ0, 1, 1, noDeadline, nil).claim(ownA, lease1s).
			release(last, asIssued, delay0, rsTimeout).claim(ownB, lease1s).requeue(idJ0).claim(ownB, lease1s).
			release(last, asIssued, delay1s, rs1KiB).get(idJ0).useQueue(1).enqueue(idJ0, 1, 2, noDeadline, nil).
			claim(ownA, lease1s).release(last, asIssued, delay0, rsJapanese).claim(ownA, lease1s).
			release(last, asIssued, delay0, rsCutCJK).checkAll()},
		// Rule 19: Fail is fenced like Finish, quarantines at once with the
		// reason given (even an empty one), and after it the holder's
		// Finish, Extend, Release and Fail are refused; Requeue brings the
		// job back with the next token; a Fail at the lease end is refused.
		{"rule19-fail", seed(0).enqueue(idJ0, 1, 3, noDeadline, nil).claim(ownA, lease100ms).
			fail(last, zeroClaim, rsTimeout).fail(last, tokenUp, rsTimeout).fail(last, otherQueue, rsTimeout).
			fail(last, asIssued, rsTimeout).fail(last, asIssued, rsSQL).finishLast().extend(last, asIssued, lease1s).
			release(last, asIssued, delay0, rsEmpty).claim(ownB, lease1s).requeue(idJ0).claim(ownB, lease10ms).
			toLeaseEnd(1, 0).fail(last, asIssued, rsTimeout).claim(ownC, lease1s).fail(last, asIssued, rsEmpty).
			checkAll()},
		// Rule 20: Cancel quarantines a leased job with the reason given,
		// and the holder's Finish, Extend, Release and Fail are refused; a
		// pending (delayed) job or an ended lease can be cancelled; a
		// cancelled or done job is ErrInvalid; an unknown ID ErrNotFound.
		{"rule20-cancel-then-finish", seed(0).enqueue(idJ0, 1, 3, noDeadline, nil).
			enqueueFull(idJ1, 2, 3, noDeadline, run100ms, prio0).claim(ownA, lease1s).cancel(idJ0, rsSQL).
			finishAny(0, asIssued).extend(0, asIssued, lease1s).release(0, asIssued, delay0, rsEmpty).
			fail(0, asIssued, rsEmpty).cancel(idJ0, rsTimeout).cancel(idJ1, rsTimeout).cancel(idJ2, rsEmpty).
			cancel(idEmpty, rsEmpty).cancel(idBadUTF8, rsEmpty).enqueue(idJ2, 3, 3, noDeadline, nil).claim(ownB, lease1s).
			finishLast().cancel(idJ2, rsTimeout).enqueue(idJ3, 4, 3, noDeadline, nil).claim(ownC, lease10ms).
			advance(10).cancel(idJ3, rsNUL).requeue(idJ0).claim(ownA, lease1s).finishLast().checkAll()},
		// Rule 21: Purge deletes done and quarantined jobs whose last
		// change is strictly before its instant (at it: kept), never
		// pending or leased ones, only in its own queue; other statuses are
		// ErrInvalid. An ID enqueued again — by Enqueue, EnqueueBatch or
		// EnqueueTx — continues the purged job's tokens with attempts 0, so
		// no claim from before the purge finishes, extends, releases or
		// fails it.
		{"rule21-purge-reenqueue-token", seed(0).enqueue(idJ0, 1, 3, noDeadline, nil).claim(ownA, lease10ms).
			advance(10).claim(ownB, lease1s).finishLast().
			useQueue(1).enqueue(idJ0, 5, maxDefault, noDeadline, nil).claim(ownA, lease1s).finishLast().useQueue(0).
			advance(5).purgeNow(purgePending, 0).purgeNow(purgeDoneLeased, 0).purgeUpdated(purgeDefault, idJ0, 0).
			purgeUpdated(purgeQuarantined, idJ0, 1).purgeUpdated(purgeDefault, idJ0, 1).get(idJ0).finishAny(1, asIssued).
			enqueue(idJ0, 2, maxDefault, noDeadline, nil).finishAny(0, asIssued).finishAny(1, asIssued).
			extend(1, asIssued, lease1s).release(1, asIssued, delay0, rsEmpty).fail(1, asIssued, rsEmpty).
			claim(ownC, lease1s).fail(last, asIssued, rsTimeout).advance(1).purgeNow(purgeBoth, 0).
			enqueueBatch(job(idJ0, 3, maxDefault, noDeadline, nil)).claim(ownA, lease1s).finishLast().advance(1).
			purgeLater(purgeRepeat).enqueueTx(true, [][]byte{jobFull(idJ0, 4, maxDefault, noDeadline, nil, runNone, prio0)}, nil).
			claim(ownB, lease1s).purgeZero(purgeBoth).useQueue(1).get(idJ0).purgeNow(purgeDone, 0).
			enqueue(idJ0, 6, maxDefault, noDeadline, nil).claim(ownA, lease1s).checkAll()},
		// Rule 22: reasons are stored cleaned and never refused: cut to
		// 1 KiB at a character boundary (é, 日, a U+FFFD that replaced an
		// invalid byte), invalid bytes replaced, NUL bytes dropped — by
		// Fail, Release and Cancel alike.
		{"rule22-reason-cut", seed(0).enqueueBatch(job(idJ0, 1, 3, noDeadline, nil), job(idJ1, 2, 3, noDeadline, nil),
			job(idJ2, 3, 3, noDeadline, nil), job(idJ3, 4, 3, noDeadline, nil), job(idSQL, 5, 3, noDeadline, nil)).
			enqueueBatch(job(idUnicode, 6, 3, noDeadline, nil), job(idWildcards, 7, 3, noDeadline, nil), job(id255, 8, 3, noDeadline, nil)).
			claimBatch(ownA, lease1s, 6).fail(0, asIssued, rs1KiB).fail(1, asIssued, rsOver1KiB).
			release(2, asIssued, delay1s, rsCutE).release(3, asIssued, delay1s, rsCutCJK).fail(4, asIssued, rsCutFFFD).
			release(5, asIssued, delay0, rsBadByte).cancel(idWildcards, rsNUL).cancel(id255, rsNULOnly).
			useQueue(1).enqueue(idJ0, 1, 3, noDeadline, nil).enqueue(idJ1, 2, 3, noDeadline, nil).
			enqueue(idJ2, 3, 3, noDeadline, nil).claim(ownA, lease1s).fail(last, asIssued, rsNULsTo1KiB).
			claim(ownA, lease1s).release(last, asIssued, delay0, rsJapanese).cancel(idJ2, rsSQL).checkAll()},
		// Stats counts every bucket (pending, scheduled, leased, expired,
		// done, quarantined) and the oldest claimable instant; List pages
		// in enqueue order by status, AfterID and Limit, and refuses a bad
		// filter (ErrInvalid) or an AfterID not in its queue (ErrNotFound).
		{"stats-and-list", seed(0).enqueueBatchFull(jobFull(idJ0, 1, 3, noDeadline, nil, runNone, prio0),
			jobFull(idJ1, 2, 3, noDeadline, nil, run100ms, prio0), jobFull(idJ2, 3, 3, noDeadline, nil, runNone, prio5),
			jobFull(idJ3, 4, 3, noDeadline, nil, runNone, prio1), jobFull(idSQL, 5, 3, noDeadline, nil, runNone, prio0)).
			stats().claim(ownA, lease10ms).claim(ownB, lease1s).claim(ownC, lease1s).finishLast().advance(5).stats().
			toLeaseEnd(0, 0).stats().cancel(idSQL, rsTimeout).cancel(idJ0, rsTimeout).stats().
			list(listAll, noAfter, limDefault).list(listPending, noAfter, limDefault).list(listLeased, noAfter, limDefault).
			list(listDone, noAfter, limDefault).list(listQuarantined, noAfter, limDefault).list(listAll, noAfter, lim2).
			list(listAll, idJ1, lim2).list(listAll, idJ3, lim1).list(listAll, idJ1, limMax).list(listAll, idEmpty, lim3).
			list(listAll, idUnicode, lim1).list(listBogus, noAfter, limDefault).list(listAll, noAfter, limNegative).
			list(listAll, noAfter, limOver).list(listBogus, idUnicode, limDefault).list(listDone, idJ0, lim1).
			useQueue(1).stats().list(listAll, idJ0, lim1).enqueue(idJ0, 1, 3, noDeadline, nil).stats().
			list(listAll, noAfter, limDefault).useQueue(0).toRunAt(idJ1, 0).stats().checkAll()},
		// A clock that steps back past an Enqueue or a Requeue: a pending
		// job without a run_at after now is claimable (rules 1 and 15),
		// whenever it was enqueued or requeued, and Stats counts it as
		// pending, not scheduled.
		{"clock-backwards-pending", seed(0).long(5).enqueue(idJ0, 1, 3, noDeadline, nil).
			enqueueFull(idJ1, 2, 3, noDeadline, runPast, prio0).advance(-8).stats().claim(ownA, lease10ms).
			claim(ownB, lease10ms).enqueue(idJ2, 3, 1, noDeadline, nil).claim(ownC, lease10ms).toLeaseEnd(2, 0).
			claim(ownC, lease10ms).requeue(idJ2).advance(-8).stats().claim(ownA, lease10ms).checkAll()},
		// A clock that steps back, with the lifecycle calls: a delayed job
		// is not claimable before its run_at, Extend counts from the
		// earlier now, a Release's delay from the instant it is made (so
		// a job released without delay waits for the clock to return).
		{"clock-backwards-lifecycle", seed(0).long(5).enqueue(idJ0, 1, 3, noDeadline, nil).
			enqueueFull(idJ1, 2, 3, noDeadline, run10ms, prio5).advance(-8).advance(-8).stats().claim(ownA, lease10ms).
			advance(30).claim(ownA, lease10ms).advance(-8).advance(-8).extend(last, asIssued, lease10ms).
			claim(ownB, lease10ms).advance(2).claim(ownB, lease10ms).release(last, asIssued, delay10ms, rsTimeout).
			advance(-8).release(1, asIssued, delay0, rsEmpty).advance(-8).stats().claim(ownC, lease10ms).
			advance(8).claim(ownC, lease10ms).finishAny(0, asIssued).checkAll()},
		// EnqueueTx joins the caller's transaction: written when it
		// commits, not when it rolls back; a call with an invalid or
		// duplicate job writes none of its jobs and leaves the transaction
		// usable for the next call.
		{"enqueue-tx", seed(0).enqueueTx(true, [][]byte{jobFull(idJ0, 1, 3, noDeadline, nil, runNone, prio0),
			jobFull(idJ1, 2, 3, noDeadline, []byte("p"), run10ms, prio5)}, [][]byte{jobFull(idJ2, 3, 3, deadline100ms, nil, runNone, prio0)}).
			enqueueTx(false, [][]byte{jobFull(idJ3, 4, 3, noDeadline, nil, runNone, prio0)}, nil).
			enqueueTx(true, [][]byte{jobFull(idJ3, 4, 3, noDeadline, nil, runNone, prio0), jobFull(idJ0, 5, 3, noDeadline, nil, runNone, prio0)},
				[][]byte{jobFull(idJ3, 6, 3, noDeadline, nil, runNone, prio1)}).
			enqueueTx(true, [][]byte{jobFull(idEmpty, 1, 3, noDeadline, nil, runNone, prio0)},
				[][]byte{jobFull(idSQL, 1, 3, noDeadline, nil, runNone, prioOver)}).
			enqueueTx(true, [][]byte{jobFull(idSQL, 1, 3, noDeadline, nil, runNone, prio0), jobFull(idSQL, 2, 3, noDeadline, nil, runNone, prio0)}, nil).
			enqueueTx(true, nil, nil).useQueue(1).enqueueTx(true, [][]byte{jobFull(idJ0, 7, 3, noDeadline, nil, runNone, prio0)}, nil).
			useQueue(0).claimBatch(ownA, lease1s, 6).checkAll()},
		// Rules 43 and 44: InTx's jobs commit with fn's nil and not with its
		// error; a call with a bad or taken job writes none of its own and
		// the transaction goes on.
		{"in-tx", seed(0).inTx(false, [][]byte{jobFull(idJ0, 1, 3, noDeadline, nil, runNone, prio0),
			jobFull(idJ1, 2, 3, noDeadline, []byte("p"), run10ms, prio5)}, [][]byte{jobFull(idJ0, 3, 3, noDeadline, nil, runNone, prio0)}).
			inTx(true, [][]byte{jobFull(idJ2, 4, 3, noDeadline, nil, runNone, prio0)}, nil).
			inTx(false, [][]byte{jobFull(idEmpty, 1, 3, noDeadline, nil, runNone, prio0)},
				[][]byte{jobFull(idJ3, 1, 3, deadline100ms, nil, runNone, prio0)}).
			useQueue(1).inTx(false, [][]byte{jobFull(idJ0, 7, 3, noDeadline, nil, runNone, prio0)}, nil).
			useQueue(0).claimBatch(ownA, lease1s, 6).checkAll()},
		// Rule 46: FinishTx runs fn only while the fence holds, and its job
		// commits with the finish: refused at the lease's end, a stale or
		// forged claim, fn's error leaves the job leased.
		{"finish-tx", seed(0).enqueue(idJ0, 1, maxDefault, noDeadline, nil).enqueue(idJ1, 1, maxDefault, deadline100ms, nil).
			claim(ownA, lease1s).claim(ownB, lease1s).
			finishTx(0, 0, true, jobFull(idJ2, 1, 3, noDeadline, nil, runNone, prio0)).
			toLeaseEnd(0, 0).finishTx(0, 0, false, jobFull(idJ2, 1, 3, noDeadline, nil, runNone, prio0)).
			toLeaseEnd(0, -1).finishTx(0, 1, false, jobFull(idJ2, 1, 3, noDeadline, nil, runNone, prio0)).
			finishTx(0, 0, false, jobFull(idJ2, 1, 3, noDeadline, nil, runNone, prio0)).
			finishTx(0, 0, false, jobFull(idJ3, 1, 3, noDeadline, nil, runNone, prio0)).
			toDeadline(idJ1, 0).finishTx(1, 0, false, jobFull(idJ3, 1, 3, noDeadline, nil, runNone, prio0)).checkAll()},
		// Rule 49: Snooze is fenced as Release is, and gives the attempt
		// back: a job with one attempt snoozed twice is claimed a third
		// time, then a Release spends it; a snooze reaching the deadline
		// quarantines.
		{"rule49-snooze", seed(0).enqueue(idJ0, 1, 1, noDeadline, nil).claim(ownA, lease1s).
			snooze(last, asIssued, delayNegative, rsTimeout).snooze(last, tokenUp, delay0, rsTimeout).
			snooze(last, otherQueue, delay0, rsTimeout).snooze(last, asIssued, delay0, rsEmpty).
			snooze(last, asIssued, delay0, rsEmpty).claim(ownB, lease1s).snooze(last, asIssued, delay100ms, rsSQL).
			toRunAt(idJ0, -1).claim(ownB, lease1s).toRunAt(idJ0, 0).claim(ownC, lease1s).
			toLeaseEnd(2, 0).snooze(2, asIssued, delay0, rsEmpty).claim(ownC, lease1s).release(last, asIssued, delay0, rsEmpty).
			checkAll()},
		{"rule49-snooze-at-deadline", seed(0).enqueueBatch(job(idJ0, 1, 3, deadline100ms, nil),
			job(idJ1, 2, 3, deadline100ms, nil), job(idJ2, 3, 3, deadline100ms, nil)).
			claimBatch(ownA, lease1s, 3).advance(5).snooze(0, asIssued, delayBeforeDeadline, rsTimeout).
			snooze(1, asIssued, delayAtDeadline, rsTimeout).snooze(2, asIssued, delayAfterDeadline, rsTimeout).
			toRunAt(idJ0, 0).claim(ownB, lease1s).checkAll()},
		// ExtendBatch is Extend for each claim at one instant: leases
		// ending 1 ms before, exactly at and 1 ms after now; the same
		// claim twice (renewed twice, to the same end); a stale token,
		// another owner, fields the fence ignores (returned as given); a
		// bad lease or a malformed claim anywhere writes nothing; a short
		// lease shortens, a claim without its queue is this queue's; an
		// empty batch.
		{"extend-batch", seed(0).extendBatch(lease1s).enqueue(idJ0, 1, maxDefault, noDeadline, nil).claim(ownA, lease10ms).
			advance(1).enqueue(idJ1, 2, maxDefault, deadline1250ms, nil).claim(ownA, lease10ms).
			advance(1).enqueue(idJ2, 3, maxDefault, noDeadline, nil).claim(ownB, lease10ms).toLeaseEnd(1, 0).
			extendBatch(lease1h, [2]int{2, asIssued}, [2]int{1, asIssued}, [2]int{0, asIssued}, [2]int{2, asIssued},
				[2]int{2, tokenUp}, [2]int{2, otherOwner}, [2]int{2, fieldsChanged}).
			extendBatch(lease0, [2]int{last, asIssued}).extendBatch(leaseHalfMS, [2]int{last, asIssued}).
			extendBatch(lease1s, [2]int{last, asIssued}, [2]int{2, zeroClaim}, [2]int{2, emptyOwner}).
			extendBatch(lease1s, [2]int{last, tokenZero}).extendBatch(lease1s, [2]int{last, emptyID}).
			extendBatch(lease1ms, [2]int{3, asIssued}, [2]int{last, noQueue}).advance(1).
			extendBatch(lease1s, [2]int{6, asIssued}, [2]int{3, asIssued}).extendBatch(lease1s).checkAll()},
		// ExtendBatch after the jobs were claimed again: the old tokens are
		// refused beside the new ones renewed; the deadline caps the lease
		// (1 ms before it too) and refuses it at it; on the other queue a
		// claim of this one is refused, and the same ID, owner and token
		// without a queue renew that queue's row.
		{"extend-batch-stale-deadline", seed(0).enqueueBatch(job(idJ0, 1, maxDefault, noDeadline, nil),
			job(idJ1, 2, maxDefault, deadline1250ms, nil), job(idJ2, 3, maxDefault, noDeadline, nil)).
			claimBatch(ownA, lease10ms, 3).advance(10).claimBatch(ownA, lease10ms, 3).
			extendBatch(lease1h, [2]int{3, asIssued}, [2]int{0, asIssued}, [2]int{4, asIssued}, [2]int{1, asIssued},
				[2]int{5, asIssued}, [2]int{2, asIssued}, [2]int{4, tokenDown}).
			toDeadline(idJ1, -1).extendBatch(lease1s, [2]int{7, asIssued}, [2]int{6, asIssued}).
			toDeadline(idJ1, 0).extendBatch(lease1s, [2]int{9, asIssued}, [2]int{8, asIssued}, [2]int{9, asIssued}).
			useQueue(1).enqueue(idJ0, 5, maxDefault, noDeadline, nil).claim(ownA, lease1s).
			extendBatch(lease10ms, [2]int{0, noQueue}, [2]int{3, asIssued}, [2]int{last, asIssued}, [2]int{0, asIssued}).
			useQueue(0).extendBatch(lease10ms, [2]int{11, asIssued}, [2]int{3, noQueue}).checkAll()},
	}
	out := make([]fuzzSeed, len(seeds))
	for i, s := range seeds {
		out[i] = fuzzSeed{s.name, s.s.b}
	}
	return out
}
