package netmsg

import "encoding/binary"

// HostSnapshot is the host's full session state, sent to a joining peer and
// to every peer after a migration. Spawns' byte slices and HostState alias
// the input when decoded.
type HostSnapshot struct {
	HostTime       uint64
	LocalPeerIndex uint64
	HostPeerIndex  uint64
	Peers          []PeerInfo
	Spawns         []Spawn
	HostState      []byte
}

// PeerEntered announces a new peer.
type PeerEntered struct {
	Peer PeerInfo
}

// PeerExited announces that a peer left.
type PeerExited struct {
	PeerIndex uint64
}

// HostCommands carries the host's reliable changes. Byte slices alias the
// input when decoded.
type HostCommands struct {
	Spawns             []Spawn
	Despawns           []Despawn
	AuthorityTransfers []AuthorityTransfer
	RPCs               []RPC
	Actions            []Action
}

// PeerCommands carries a peer's RPCs to the host. Byte slices alias the
// input when decoded.
type PeerCommands struct {
	RPCs []RPC
}

// EntityUpdates carries property updates stamped with one Lamport time.
// Update data aliases the input when decoded.
type EntityUpdates struct {
	Time    uint64
	Updates []Update
}

// AppendHostSnapshot appends m to dst. It panics on an invalid peer id (see
// ValidPeerID) or a length that does not fit in u32.
func AppendHostSnapshot(dst []byte, m *HostSnapshot) []byte {
	dst = append(dst, byte(TypeHostSnapshot))
	dst = binary.LittleEndian.AppendUint64(dst, m.HostTime)
	dst = binary.LittleEndian.AppendUint64(dst, m.LocalPeerIndex)
	dst = binary.LittleEndian.AppendUint64(dst, m.HostPeerIndex)
	dst = appendCount(dst, len(m.Peers))
	for i := range m.Peers {
		dst = appendPeerInfo(dst, &m.Peers[i])
	}
	dst = appendCount(dst, len(m.Spawns))
	for i := range m.Spawns {
		dst = appendSpawn(dst, &m.Spawns[i])
	}
	return appendBlob32(dst, m.HostState, "host state length")
}

// ConsumeHostSnapshot decodes the HostSnapshot at the start of b into m,
// reusing m's slices, and returns its length. Byte slices in m alias b and
// are valid until b is reused. A nil m validates only. Every error is a
// *ProtocolError; on error m's contents are unspecified.
func ConsumeHostSnapshot(b []byte, m *HostSnapshot) (n int, err error) {
	d := decoder{b: b}
	d.msgType(TypeHostSnapshot)
	hostTime := d.u64("host time")
	local := d.u64("local peer index")
	host := d.u64("host peer index")
	np := d.count("peer count", minPeerInfoSize)
	if d.err != nil {
		return d.result()
	}
	var peers []PeerInfo
	if m != nil {
		m.HostTime, m.LocalPeerIndex, m.HostPeerIndex = hostTime, local, host
		m.Peers = resize(m.Peers, np)
		peers = m.Peers
	}
	for i := 0; i < np && d.err == nil; i++ {
		d.peerInfo(elem(peers, i))
	}
	ns := d.count("entity count", minSpawnSize)
	if d.err != nil {
		return d.result()
	}
	var spawns []Spawn
	if m != nil {
		m.Spawns = resize(m.Spawns, ns)
		spawns = m.Spawns
	}
	for i := 0; i < ns && d.err == nil; i++ {
		d.spawn(elem(spawns, i))
	}
	state := d.blob(uint64(d.u32("host state length")), "host state")
	if d.err == nil && m != nil {
		m.HostState = state
	}
	return d.result()
}

// elem returns &s[i], or nil when s is nil (validate-only decoding).
func elem[E any](s []E, i int) *E {
	if s == nil {
		return nil
	}
	return &s[i]
}

// AppendPeerEntered appends m to dst. It panics on an invalid peer id (see
// ValidPeerID).
func AppendPeerEntered(dst []byte, m *PeerEntered) []byte {
	dst = append(dst, byte(TypePeerEntered))
	return appendPeerInfo(dst, &m.Peer)
}

// ConsumePeerEntered decodes the PeerEntered at the start of b into m and
// returns its length. A nil m validates only. Every error is a
// *ProtocolError.
func ConsumePeerEntered(b []byte, m *PeerEntered) (n int, err error) {
	d := decoder{b: b}
	d.msgType(TypePeerEntered)
	var p *PeerInfo
	if m != nil {
		p = &m.Peer
	}
	d.peerInfo(p)
	return d.result()
}

// AppendPeerExited appends m to dst.
func AppendPeerExited(dst []byte, m *PeerExited) []byte {
	dst = append(dst, byte(TypePeerExited))
	return binary.LittleEndian.AppendUint64(dst, m.PeerIndex)
}

// ConsumePeerExited decodes the PeerExited at the start of b into m and
// returns its length. A nil m validates only. Every error is a
// *ProtocolError.
func ConsumePeerExited(b []byte, m *PeerExited) (n int, err error) {
	d := decoder{b: b}
	d.msgType(TypePeerExited)
	idx := d.u64("peer index")
	if d.err == nil && m != nil {
		m.PeerIndex = idx
	}
	return d.result()
}

// AppendHostCommands appends m to dst. It panics on a length that does not
// fit in u32.
func AppendHostCommands(dst []byte, m *HostCommands) []byte {
	dst = append(dst, byte(TypeHostCommands))
	dst = appendCount(dst, len(m.Spawns))
	for i := range m.Spawns {
		dst = appendSpawn(dst, &m.Spawns[i])
	}
	dst = appendCount(dst, len(m.Despawns))
	for _, x := range m.Despawns {
		dst = binary.LittleEndian.AppendUint64(dst, x.NetworkID)
	}
	dst = appendCount(dst, len(m.AuthorityTransfers))
	for _, x := range m.AuthorityTransfers {
		dst = binary.LittleEndian.AppendUint64(dst, x.NetworkID)
		dst = binary.LittleEndian.AppendUint64(dst, x.NewAuthorIndex)
	}
	dst = appendCount(dst, len(m.RPCs))
	for _, x := range m.RPCs {
		dst = appendCall(dst, x.Type, x.Data)
	}
	dst = appendCount(dst, len(m.Actions))
	for _, x := range m.Actions {
		dst = appendCall(dst, x.Type, x.Data)
	}
	return dst
}

// ConsumeHostCommands decodes the HostCommands at the start of b into m,
// reusing m's slices, and returns its length. Byte slices in m alias b and
// are valid until b is reused. A nil m validates only. Every error is a
// *ProtocolError; on error m's contents are unspecified.
func ConsumeHostCommands(b []byte, m *HostCommands) (n int, err error) {
	d := decoder{b: b}
	d.msgType(TypeHostCommands)

	ns := d.count("spawn count", minSpawnSize)
	var spawns []Spawn
	if d.err == nil && m != nil {
		m.Spawns = resize(m.Spawns, ns)
		spawns = m.Spawns
	}
	for i := 0; i < ns && d.err == nil; i++ {
		d.spawn(elem(spawns, i))
	}

	nd := d.count("despawn count", despawnSize)
	var despawns []Despawn
	if d.err == nil && m != nil {
		m.Despawns = resize(m.Despawns, nd)
		despawns = m.Despawns
	}
	for i := 0; i < nd && d.err == nil; i++ {
		id := d.u64("network id")
		if despawns != nil {
			despawns[i] = Despawn{NetworkID: id}
		}
	}

	na := d.count("authority transfer count", authorityTransferSize)
	var transfers []AuthorityTransfer
	if d.err == nil && m != nil {
		m.AuthorityTransfers = resize(m.AuthorityTransfers, na)
		transfers = m.AuthorityTransfers
	}
	for i := 0; i < na && d.err == nil; i++ {
		id := d.u64("network id")
		author := d.u64("new author index")
		if transfers != nil {
			transfers[i] = AuthorityTransfer{NetworkID: id, NewAuthorIndex: author}
		}
	}

	nr := d.count("rpc count", minRPCSize)
	var rpcs []RPC
	if d.err == nil && m != nil {
		m.RPCs = resize(m.RPCs, nr)
		rpcs = m.RPCs
	}
	for i := 0; i < nr && d.err == nil; i++ {
		typ, data := d.call()
		if rpcs != nil {
			rpcs[i] = RPC{Type: typ, Data: data}
		}
	}

	var actions *[]Action
	if m != nil {
		actions = &m.Actions
	}
	d.actions(actions)
	return d.result()
}

// actions decodes an action count and that many Actions into *dst, reusing its array; a nil dst
// validates only.
func (d *decoder) actions(dst *[]Action) {
	nc := d.count("action count", minRPCSize)
	var actions []Action
	if d.err == nil && dst != nil {
		*dst = resize(*dst, nc)
		actions = *dst
	}
	for i := 0; i < nc && d.err == nil; i++ {
		typ, data := d.call()
		if actions != nil {
			actions[i] = Action{Type: typ, Data: data}
		}
	}
}

// AppendPeerCommands appends m to dst. It panics on a length that does not
// fit in u32.
func AppendPeerCommands(dst []byte, m *PeerCommands) []byte {
	dst = append(dst, byte(TypePeerCommands))
	dst = appendCount(dst, len(m.RPCs))
	for _, x := range m.RPCs {
		dst = appendCall(dst, x.Type, x.Data)
	}
	return dst
}

// ConsumePeerCommands decodes the PeerCommands at the start of b into m,
// reusing m's slice, and returns its length. RPC data aliases b and is valid
// until b is reused. A nil m validates only. Every error is a
// *ProtocolError; on error m's contents are unspecified.
func ConsumePeerCommands(b []byte, m *PeerCommands) (n int, err error) {
	d := decoder{b: b}
	d.msgType(TypePeerCommands)
	nr := d.count("rpc count", minRPCSize)
	var rpcs []RPC
	if d.err == nil && m != nil {
		m.RPCs = resize(m.RPCs, nr)
		rpcs = m.RPCs
	}
	for i := 0; i < nr && d.err == nil; i++ {
		typ, data := d.call()
		if rpcs != nil {
			rpcs[i] = RPC{Type: typ, Data: data}
		}
	}
	return d.result()
}

// AppendEntityUpdates appends m to dst. It panics on an Update that cannot
// be encoded (see AppendUpdate). To fill a datagram without exceeding
// MaxDatagram, use an EntityUpdatesWriter instead.
func AppendEntityUpdates(dst []byte, m *EntityUpdates) []byte {
	dst = append(dst, byte(TypeEntityUpdates))
	dst = binary.LittleEndian.AppendUint64(dst, m.Time)
	dst = appendCount(dst, len(m.Updates))
	for i := range m.Updates {
		dst = AppendUpdate(dst, &m.Updates[i])
	}
	return dst
}

// ConsumeEntityUpdates decodes the EntityUpdates at the start of b into m,
// reusing m's slice, and returns its length. Update data aliases b and is
// valid until b is reused. A nil m validates only. Every error is a
// *ProtocolError; on error m's contents are unspecified. With a reused m it
// allocates nothing.
func ConsumeEntityUpdates(b []byte, m *EntityUpdates) (n int, err error) {
	d := decoder{b: b}
	d.msgType(TypeEntityUpdates)
	t := d.u64("time")
	nu := d.count("update count", minUpdateSize)
	if d.err != nil {
		return d.result()
	}
	var updates []Update
	if m != nil {
		m.Time = t
		m.Updates = resize(m.Updates, nu)
		updates = m.Updates
	}
	for i := 0; i < nu && d.err == nil; i++ {
		d.update(elem(updates, i))
	}
	return d.result()
}
