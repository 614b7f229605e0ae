package netmsg

import (
	"encoding/binary"
	"fmt"
)

// Application traffic: application messages (types 128–255) go unchanged between the two ends
// of a link (member and host); Relay carries one between two members through the host, and
// Actions carries a member's TRNP Actions to the host (TRNP's PeerCommands has RPCs only).

// relayHeaderSize is the body of a Relay without its data: peer u64 | appType u8.
const relayHeaderSize = 8 + 1

// RelayOverhead is the size of a Relay message without its data.
const RelayOverhead = extHeaderSize + relayHeaderSize

// Relay is an application message relayed by the host. From a member to the host, Peer is the
// destination (0: every member); from the host to a member, Peer is the sender. AppType is
// 128–255. Decoded Data aliases the input.
type Relay struct {
	Peer    uint64
	AppType Type
	Data    []byte
}

// AppendRelay appends m to dst. It panics when AppType is not an application type.
func AppendRelay(dst []byte, m *Relay) []byte {
	if !m.AppType.IsApplication() {
		panic(fmt.Sprintf("netmsg: Relay of %v, not an application type", m.AppType))
	}
	dst, mark := StartExt(dst, TypeRelay)
	dst = binary.LittleEndian.AppendUint64(dst, m.Peer)
	dst = append(dst, byte(m.AppType))
	dst = append(dst, m.Data...)
	return FinishExt(dst, mark)
}

// ConsumeRelay decodes the Relay at the start of b into m and returns its length. A nil m
// validates only. An application type below 128 is ErrWrongType. Every error is a
// *ProtocolError.
func ConsumeRelay(b []byte, m *Relay) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeRelay)
	if !d.checkBody(body, relayHeaderSize, false) {
		return d.result()
	}
	peer := d.u64("peer")
	at := d.off
	typ := Type(d.u8("application type"))
	if d.err == nil && !typ.IsApplication() {
		d.failf(at, ErrWrongType, "relayed type %d is not an application type (128–255)", uint8(typ))
	}
	data := d.blob(uint64(len(d.b)-d.off), "data")
	if d.err == nil && m != nil {
		*m = Relay{Peer: peer, AppType: typ, Data: data}
	}
	return d.result()
}

// Actions carries a member's TRNP Actions to the host. Decoded data aliases the input.
type Actions struct {
	Actions []Action
}

// AppendActions appends m to dst. It panics on a length that does not fit in u32.
func AppendActions(dst []byte, m *Actions) []byte {
	dst, mark := StartExt(dst, TypeActions)
	dst = appendCount(dst, len(m.Actions))
	for _, x := range m.Actions {
		dst = appendCall(dst, x.Type, x.Data)
	}
	return FinishExt(dst, mark)
}

// ConsumeActions decodes the Actions at the start of b into m, reusing its slice, and returns
// its length. A nil m validates only. Every error is a *ProtocolError; on error m's contents
// are unspecified.
func ConsumeActions(b []byte, m *Actions) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeActions)
	if !d.checkBody(body, 4, false) {
		return d.result()
	}
	var actions *[]Action
	if m != nil {
		actions = &m.Actions
	}
	d.actions(actions)
	if d.err == nil && d.off != len(d.b) {
		d.failf(1, ErrBodyLength, "Actions body has %d bytes after its last action", len(d.b)-d.off)
	}
	return d.result()
}

// Forget tells a member to drop entities that left its interest (the host's interest
// management): not a deletion, which every replica would keep, but "you no longer follow these".
// Decoded NetworkIDs reuse m's slice.
type Forget struct {
	NetworkIDs []uint64
}

// AppendForget appends m to dst. It panics on a count that does not fit in u32.
func AppendForget(dst []byte, m *Forget) []byte {
	dst, mark := StartExt(dst, TypeForget)
	dst = appendCount(dst, len(m.NetworkIDs))
	for _, id := range m.NetworkIDs {
		dst = binary.LittleEndian.AppendUint64(dst, id)
	}
	return FinishExt(dst, mark)
}

// ConsumeForget decodes the Forget at the start of b into m, reusing its slice, and returns its
// length. A nil m validates only. Every error is a *ProtocolError.
func ConsumeForget(b []byte, m *Forget) (n int, err error) {
	d := decoder{b: b}
	body := d.extFrame(TypeForget)
	if !d.checkBody(body, 4, false) {
		return d.result()
	}
	c := d.count("network id count", 8)
	if d.err == nil && body != 4+8*c {
		d.failf(1, ErrBodyLength, "Forget body of %d bytes for %d network ids", body, c)
	}
	var ids []uint64
	if d.err == nil && m != nil {
		m.NetworkIDs = resize(m.NetworkIDs, c)
		ids = m.NetworkIDs
	}
	for i := 0; i < c && d.err == nil; i++ {
		id := d.u64("network id")
		if ids != nil {
			ids[i] = id
		}
	}
	return d.result()
}
