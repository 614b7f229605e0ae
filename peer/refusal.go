package peer

// Refusal names why an input was refused by the limits of docs/protocol.md §5 ("Limits"); it is
// the index of Status.RefusedBy and the reason label of the refusal counters in /metrics.
type Refusal uint8

const (
	// RefusedStampSkew: a member's stamp too far above the host's clock, or beyond its skew budget.
	RefusedStampSkew Refusal = iota
	// RefusedBatch: a member's correction batch over its byte or message bound.
	RefusedBatch
	// RefusedCorrection: a correction that deletes a reserved number or a version far above any
	// known, or hands an entity to its sender.
	RefusedCorrection
	// RefusedDigest: a member's digest of another bucket count than its first.
	RefusedDigest
	// RefusedReassembly: a fragmented payload left unfinished past its deadline (either side).
	RefusedReassembly
	// RefusedHostStamp: a host's stamp too far above a synced member's clock.
	RefusedHostStamp
	// RefusedHostDeletion: a host's deletion of a reserved number or of a version far above any
	// the member knows.
	RefusedHostDeletion
	// RefusedSnapshot: a host snapshot beyond the sync bounds (bytes, entities, clock).
	RefusedSnapshot
	// RefusedApplication: a member's application message, relay or Action over its size limit.
	RefusedApplication
	// RefusedAck: a member's Ack of a datagram the host never sent it.
	RefusedAck
	// RefusedRelayBudget: a member's relayed message whose copies (one per recipient) are over
	// the sender's relay budget (Config.RelayRate, RelayBurst); dropped, not a strike.
	RefusedRelayBudget
	// RefusedRelayInbound: a copy of a relayed message over its recipient's inbound budget
	// (Config.RecvRelayRate, RecvRelayBurst); dropped, not a strike.
	RefusedRelayInbound
	// RefusedRelayBacklog: a copy of a relayed message to a member whose queue on that channel
	// is past the relay backlog (Config.RelayBacklog); dropped, not a strike.
	RefusedRelayBacklog
	// RefusedAppendSets: a member's append that would start one more append set on an entity
	// carrying WorldLimits.AppendSets.
	RefusedAppendSets
	// RefusedMemberWorld: a member's write that would take what its writes added to the world
	// past WorldLimits.MemberBytes.
	RefusedMemberWorld
	// RefusedWorldBytes: a member's write that would take the world past WorldLimits.RoomBytes.
	RefusedWorldBytes
	// RefusedSurvivor: a member's greeting claims an earlier host's state that signaling
	// never recorded it synced in (no correction window), or a correction through the window
	// beyond what a survivor could have seen (docs/protocol.md §5 "Limits").
	RefusedSurvivor
	// RefusedEarlySignals: a member's signals past maxEarlySignals for a link whose answer is
	// still being made off the loop; the link is dropped (its connect timeout makes it again).
	RefusedEarlySignals
	// NumRefusals is the number of reasons.
	NumRefusals
)

var refusalNames = [NumRefusals]string{
	RefusedStampSkew:    "stamp_skew",
	RefusedBatch:        "batch_size",
	RefusedCorrection:   "correction",
	RefusedDigest:       "digest_buckets",
	RefusedReassembly:   "reassembly_timeout",
	RefusedHostStamp:    "host_stamp_skew",
	RefusedHostDeletion: "host_deletion",
	RefusedSnapshot:     "snapshot_bounds",
	RefusedApplication:  "application_size",
	RefusedAck:          "ack",
	RefusedRelayBudget:  "relay_budget",
	RefusedRelayInbound: "relay_inbound",
	RefusedRelayBacklog: "relay_backlog",
	RefusedAppendSets:   "append_sets",
	RefusedMemberWorld:  "member_world_bytes",
	RefusedWorldBytes:   "world_bytes",
	RefusedSurvivor:     "survivor_claim",
	RefusedEarlySignals: "early_signals",
}

// String returns the reason's label, as /metrics shows it.
func (r Refusal) String() string {
	if r < NumRefusals {
		return refusalNames[r]
	}
	return "unknown"
}

// refuse counts one refused input for reason r (Status.Refused and Status.RefusedBy); any goroutine.
func (c *counters) refuse(r Refusal) {
	c.refused.Add(1)
	c.refusedBy[r].Add(1)
}
