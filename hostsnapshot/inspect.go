package hostsnapshot

import (
	"errors"
	"fmt"
	"io"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/netmsg"
)

// Stats is what a snapshot carries, for a receiver to judge it against its limits before it
// merges anything (Inspect).
type Stats struct {
	// Clock is the host clock the snapshot claims; Apply raises the receiver's clock to it.
	Clock crdt.Timestamp
	// MaxStamp is the highest timestamp of any value in it (spawned values and stream).
	MaxStamp crdt.Timestamp
	// Values counts the values it carries: one per spawned value (meta included) and one per
	// stream message.
	Values int
	// Bytes is what it carries: the host state, the spawns' creation and update data, the peers'
	// ids.
	Bytes int
}

// Inspect reads what s carries without merging it: its clock, its highest stamp, its values
// and bytes. It fails, wrapping ErrHostState, where Apply would fail on the host state; it does
// not check the spawns against a schema table (Apply does).
func Inspect(s *netmsg.HostSnapshot) (Stats, error) {
	h, err := parseHostState(s.HostState)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Clock: h.info.Clock, Values: len(h.stamps) / 4, Bytes: len(s.HostState)}
	for i := 0; i+4 <= len(h.stamps); i += 4 {
		st.MaxStamp = max(st.MaxStamp, crdt.Timestamp(le.Uint32(h.stamps[i:])))
	}
	for i := range s.Spawns {
		st.Bytes += len(s.Spawns[i].CreationData) + len(s.Spawns[i].UpdateData)
	}
	for i := range s.Peers {
		st.Bytes += len(s.Peers[i].PeerID)
	}
	var rd crdt.Reader
	var m crdt.Message
	for rd.Reset(h.stream); ; {
		if err := rd.Next(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return st, fmt.Errorf("%w: %w", ErrHostState, err)
		}
		st.Values++
		st.MaxStamp = max(st.MaxStamp, m.Timestamp)
	}
	return st, nil
}
