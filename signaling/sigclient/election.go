package sigclient

// Candidate is what the election needs to know about one member.
type Candidate struct {
	// Index is the member's peer index.
	Index PeerIndex
	// ID is the member's identity ("user/device").
	ID Identity
	// Power is the member's power level; higher wins.
	Power int
	// JoinOrder orders members by when they joined; lower wins. The server
	// issues peer indices in join order and passes the peer index here, so
	// a client that recomputes the election can do the same.
	JoinOrder uint64
	// MayHost is false for members whose token forbids hosting; such members
	// are never elected.
	MayHost bool
	// Synced is true once the member has applied a snapshot from the host
	// (or has been host itself).
	Synced bool
}

// Elect picks the host of a room. It is pure and deterministic, so peers can
// recompute it when signaling is unreachable.
//
// Only members that may host and have synced are eligible. If none of the
// members that may host has synced (the first member of an empty room, or a
// host that died before anyone had synced from it), all members that may host
// are eligible: none of them holds state the others lack, so there is nothing
// to lose, and a room without a host makes no progress.
//
// Among the eligible members:
//  1. pinned hosts first, in the order of pinned (a bare user in pinned stands
//     for all of that user's devices, ranked among themselves by the rules
//     below);
//  2. then the highest power level;
//  3. then the earliest join (lowest JoinOrder);
//  4. then the lowest peer id: identity string, then peer index.
//
// Unlike TRNP, pinned hosts are preferred rather than exclusive: a room whose
// pinned hosts are all absent still gets a host, so it keeps running.
//
// Elect returns false if no member may host.
func Elect(members []Candidate, pinned []Identity) (PeerIndex, bool) {
	anySynced := false
	for i := range members {
		if members[i].MayHost && members[i].Synced {
			anySynced = true
			break
		}
	}
	eligible := func(c *Candidate) bool {
		return c.MayHost && (c.Synced || !anySynced)
	}
	for _, p := range pinned {
		best := -1
		for i := range members {
			c := &members[i]
			if !eligible(c) || !p.Matches(c.ID) {
				continue
			}
			if best < 0 || ranksBefore(c, &members[best]) {
				best = i
			}
		}
		if best >= 0 {
			return members[best].Index, true
		}
	}
	best := -1
	for i := range members {
		c := &members[i]
		if !eligible(c) {
			continue
		}
		if best < 0 || ranksBefore(c, &members[best]) {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	return members[best].Index, true
}

// ranksBefore reports whether a beats b after the pinned-host rule.
func ranksBefore(a, b *Candidate) bool {
	if a.Power != b.Power {
		return a.Power > b.Power
	}
	if a.JoinOrder != b.JoinOrder {
		return a.JoinOrder < b.JoinOrder
	}
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	return a.Index < b.Index
}

// Preempts reports whether winner, the member Elect picked, takes the room over from cur, the
// current host, which is still present and may host. A running host hands over only to a member
// that ranks before it by the pinned-host order or by power (a planned handover); join order
// decides only an open seat. Without this, a member that resumes an older, lower peer index
// after a signaling outage would take the room from the host that kept it running: a needless
// migration.
func Preempts(winner, cur Candidate, pinned []Identity) bool {
	if wr, cr := pinRank(winner.ID, pinned), pinRank(cur.ID, pinned); wr != cr {
		return wr < cr
	}
	return winner.Power > cur.Power
}

// pinRank is the position of the first pinned identity id matches, or len(pinned).
func pinRank(id Identity, pinned []Identity) int {
	for i, p := range pinned {
		if p.Matches(id) {
			return i
		}
	}
	return len(pinned)
}
