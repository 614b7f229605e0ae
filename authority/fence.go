package authority

// Fence tells, on a peer, whether a host message comes from the host of the
// current term. Signaling announces every (term, host) pair; the peer feeds
// them to Announce and checks each host message with Accept. The zero value
// knows no host and accepts nothing. The rules are shared with the browser
// (web/static/js/authority.js) as vectors: testdata/peer/fencing.json.
type Fence struct {
	term Term
	host PeerIndex
}

// Term returns the current term; 0 before the first announcement.
func (f *Fence) Term() Term { return f.term }

// Host returns the host of the current term.
func (f *Fence) Host() PeerIndex { return f.host }

// Observe adopts host as the host of term if term is newer than the current
// one, and reports whether it did. Only signaling's announcements should be
// observed: a message claiming a newer term proves nothing about its sender.
// Older or equal terms, and term 0, are ignored.
func (f *Fence) Observe(term Term, host PeerIndex) bool {
	if term <= f.term {
		return false
	}
	f.term, f.host = term, host
	return true
}

// Announce adopts signaling's announcement of host (0: "no host") for term,
// and reports whether the fence moved. Signaling's latest word wins: a newer
// term, and a host named in the fence's own term when the fence holds "no
// host" or another host (a restarted server that waited for its host
// announces it in the term it first announced without one; a room whose term
// saturated at 2^53-1 changes host within it). "No host" in the fence's own
// term is a server waiting for the host the fence holds to resume, and is
// ignored, as are older terms and term 0 (docs/protocol.md §5, "Fencing,
// precisely").
func (f *Fence) Announce(term Term, host PeerIndex) bool {
	if term != 0 && term == f.term && host != 0 && host != f.host {
		f.host = host
		return true
	}
	return f.Observe(term, host)
}

// Accept returns nil if a host message stamped with term came from the host of
// the current term. Otherwise it returns a *RejectError with Op OpHostMessage:
//
//   - StaleTerm: term is older than the current one. Drop the message.
//   - FutureTerm: term is newer. Keep the message aside; once signaling
//     announces that term, Observe it and Accept the message again.
//   - NotHost: the sender is not the current host, or there is no host (none
//     known yet, or signaling announced "no host"), whoever the sender.
//     Keep the message aside in case the sender becomes host (TRNP).
//
// It does not allocate when it accepts.
func (f *Fence) Accept(term Term, sender PeerIndex) error {
	var code RejectCode
	switch {
	case term < f.term:
		code = StaleTerm
	case term > f.term:
		code = FutureTerm
	case f.host == 0 || sender != f.host:
		code = NotHost
	default:
		return nil
	}
	return &RejectError{Code: code, Op: OpHostMessage, Peer: sender, Term: term}
}
