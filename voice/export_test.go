package voice

import "github.com/concordrtc/concord/signaling"

// memberSet is a fake signaling member table.
type memberSet map[signaling.RoomID]map[signaling.Identity]signaling.PeerIndex

func (m memberSet) MemberIndex(room signaling.RoomID, id signaling.Identity) (signaling.PeerIndex, bool) {
	i, ok := m[room][id]
	return i, ok
}
