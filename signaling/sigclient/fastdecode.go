package sigclient

import (
	"strconv"
)

// A burst of joins is O(n²) membership notices: each join and each member's sync goes to every
// member (docs/protocol.md §4), so in a burst of 1,024 every member decodes about 2,048 of them,
// two million in all. encoding/json took 3–15 µs for each (reflection over ServerMessage's
// twenty fields, six to eleven allocations): seconds of CPU a burst spread over the members.
// decodeNotice reads member-joined and member-synced exactly as the server encodes them (the
// fields in its struct order, no white space, strings without escapes, integers without sign,
// fraction or exponent) in one pass; anything else, a server's message in another form
// included, is left to encoding/json, so what is decoded never differs
// (FuzzDecodeNoticeAsJSON).

var (
	noticeSyncedPrefix = `{"v":` + strconv.Itoa(ProtocolVersion) + `,"type":"` + string(TypeMemberSynced) + `","peerIndex":`
	noticeJoinedPrefix = `{"v":` + strconv.Itoa(ProtocolVersion) + `,"type":"` + string(TypeMemberJoined) + `","member":{"peerIndex":`
)

// decodeNotice decodes a member-synced or member-joined message in the server's own form into
// dst and its Event, as DecodeServerMessage would; ok is false for anything else.
func decodeNotice(b []byte, dst *ServerMessage) (ev Event, ok bool) {
	s := noticeScan{b: b, ok: true}
	switch {
	case s.lit(noticeSyncedPrefix):
		idx := s.uint()
		var term uint64
		if s.lit(`,"term":`) {
			term = s.uint()
		}
		if !s.lit(`}`) || !s.end() || idx == 0 {
			return nil, false
		}
		*dst = ServerMessage{V: ProtocolVersion, Type: TypeMemberSynced, PeerIndex: PeerIndex(idx), Term: Term(term)}
		return MemberSynced{Index: PeerIndex(idx), Term: Term(term)}, true
	case s.lit(noticeJoinedPrefix):
		var m Member
		m.Index = PeerIndex(s.uint())
		s.must(`,"peerId":`)
		m.ID = Identity(s.str())
		s.must(`,"kind":`)
		m.Kind = Kind(s.str())
		s.must(`,"power":`)
		m.Power = s.int()
		s.must(`,"mayHost":`)
		m.MayHost = s.bool()
		s.must(`,"synced":`)
		m.Synced = s.bool()
		if s.lit(`,"syncedTerm":`) {
			m.SyncedTerm = Term(s.uint())
		}
		if !s.lit(`}}`) || !s.end() || m.Index == 0 {
			return nil, false
		}
		*dst = ServerMessage{V: ProtocolVersion, Type: TypeMemberJoined, Member: &m}
		return MemberJoined{Member: m}, true
	}
	return nil, false
}

// noticeScan reads the server's form of a notice; ok turns false at the first byte that is not
// in it, and every later read then fails too.
type noticeScan struct {
	b  []byte
	i  int
	ok bool
}

// lit consumes s if it comes next.
func (s *noticeScan) lit(lit string) bool {
	if !s.ok || len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

func (s *noticeScan) must(lit string) {
	if !s.lit(lit) {
		s.ok = false
	}
}

func (s *noticeScan) end() bool { return s.ok && s.i == len(s.b) }

// maxNoticeDigits keeps every integer read well inside int64 and uint64.
const maxNoticeDigits = 18

// uint reads 0 or a digit 1–9 followed by digits (JSON allows no leading zero), at most
// maxNoticeDigits.
func (s *noticeScan) uint() uint64 {
	if !s.ok || s.i == len(s.b) || s.b[s.i] < '0' || s.b[s.i] > '9' {
		s.ok = false
		return 0
	}
	if s.b[s.i] == '0' {
		s.i++
		return 0
	}
	var v uint64
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		v = v*10 + uint64(s.b[s.i]-'0')
		s.i++
	}
	if s.i-start > maxNoticeDigits {
		s.ok = false
		return 0
	}
	return v
}

// int reads an integer with an optional minus sign.
func (s *noticeScan) int() int {
	neg := s.lit(`-`)
	v := int(s.uint())
	if neg {
		return -v
	}
	return v
}

func (s *noticeScan) bool() bool {
	switch {
	case s.lit(`true`):
		return true
	case s.lit(`false`):
		return false
	}
	s.ok = false
	return false
}

// str reads a string of printable ASCII without escapes (what encoding/json decodes to the same
// bytes); any other string is left to encoding/json.
func (s *noticeScan) str() string {
	if !s.lit(`"`) {
		return ""
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := string(s.b[start:s.i])
			s.i++
			return v
		case c < 0x20 || c > 0x7e || c == '\\':
			s.ok = false
			return ""
		}
		s.i++
	}
	s.ok = false
	return ""
}
