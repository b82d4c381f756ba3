package engine

// Snooze (rule 49 in docs/rules.md): a Release that gives the claim's
// attempt back.

// FenceSnooze is a Snooze: the job goes back to pending after a delay, as
// a Release, and its max attempts rise by one, so the claim it was given
// spends none. A snooze that would end at or after the deadline
// quarantines as a Release does, and then leaves max attempts as they
// were.
const FenceSnooze = FenceFail + 1

// SnoozeFenced is the Snooze of a claim with its reasons: Reason when it
// goes back to pending, ReasonDeadline when the delay reaches the deadline.
// The root cleans them; an engine's own snoozes pass short constant
// reasons.
func SnoozeFenced(id, owner string, token, delay int64, reason string) Fenced {
	return Fenced{Kind: FenceSnooze, ID: id, Owner: owner, Token: token, Delay: delay, Reason: reason,
		ReasonDeadline: "snoozed past the deadline: " + reason}
}
