package peer

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/netmsg"
	"github.com/concordrtc/concord/peer/link"
)

// The application API in a stepped room: Unset, Append, application messages, Actions, grants
// and RPCs, each between a host (1) and members (2, 3).

const chatComponent crdt.ComponentID = 5000

type received struct {
	from PeerIndex
	typ  uint32
	data string
}

// apiApp is stepApp with every application hook, recording what it hears.
type apiApp struct {
	stepApp
	msgs, actions, rpcs []received
	events              []Event
	openChat            bool // AppendPolicy: anyone may append to the room's chat
	denyRelayType       uint8
}

func newAPIApp() *apiApp { return &apiApp{stepApp: stepApp{table: stepSchemas()}} }

func (a *apiApp) HostStart(w *World) {
	a.stepApp.HostStart(w)
	if !w.Exists(RoomEntity) {
		_ = w.SpawnRoom(stepSchemaBox, nil, []byte{0, 0, 0, 0})
	}
}
func (a *apiApp) Message(w *World, from PeerIndex, typ uint8, data []byte) {
	a.msgs = append(a.msgs, received{from, uint32(typ), string(data)})
}
func (a *apiApp) Action(w *World, from PeerIndex, typ uint32, data []byte) {
	a.actions = append(a.actions, received{from, typ, string(data)})
}
func (a *apiApp) RPC(w *World, from PeerIndex, typ uint32, data []byte) {
	a.rpcs = append(a.rpcs, received{from, typ, string(data)})
}
func (a *apiApp) OnEvent(w *World, ev Event) { a.events = append(a.events, ev) }
func (a *apiApp) AllowAppend(w *World, from PeerIndex, e Entity, c crdt.ComponentID, value []byte) bool {
	return a.openChat && e == RoomEntity && c == chatComponent
}
func (a *apiApp) AllowRelay(w *World, from, to PeerIndex, typ uint8) bool {
	return typ != a.denyRelayType
}

func (a *apiApp) take() (msgs, actions, rpcs []received) {
	msgs, actions, rpcs = a.msgs, a.actions, a.rpcs
	a.msgs, a.actions, a.rpcs = nil, nil, nil
	return
}

func apiRoom(t *testing.T) (*stepNet, []*apiApp) {
	n := newStepNet(t)
	apps := []*apiApp{nil, newAPIApp(), newAPIApp(), newAPIApp()}
	for i := PeerIndex(1); i <= 3; i++ {
		n.join(i, apps[i], 1, 1)
	}
	for i := PeerIndex(2); i <= 3; i++ {
		if !n.peers[i].member.synced {
			t.Fatalf("member %d not synced", i)
		}
	}
	return n, apps
}

func sameHash(t *testing.T, n *stepNet) {
	t.Helper()
	want := n.peers[1].w.r.Hash()
	for idx, sp := range n.peers {
		if got := sp.w.r.Hash(); got != want {
			t.Errorf("peer %d replica hash %x, host's %x", idx, got, want)
		}
	}
}

func TestUnset(t *testing.T) {
	n, apps := apiRoom(t)
	box := apps[1].box
	// The host deletes a property of its box: every member sees it gone, with an event.
	n.do(1, func(w *World) {
		if err := w.Unset(box, 0); err != nil {
			t.Fatal(err)
		}
	})
	n.pump()
	for i := PeerIndex(1); i <= 3; i++ {
		if _, ok := n.peers[i].w.Get(box, 0); ok {
			t.Errorf("peer %d still has the box's pos", i)
		}
		if !slices.ContainsFunc(apps[i].events, func(ev Event) bool { return ev.Kind == EventUnset && ev.Entity == box && ev.Props == 1 }) {
			t.Errorf("peer %d heard no EventUnset for the box", i)
		}
	}
	// A member cannot delete what it does not write.
	n.do(2, func(w *World) {
		if err := w.Unset(box, 0); !errors.Is(err, ErrNoAuthority) {
			t.Errorf("member Unset of the host's box = %v, want ErrNoAuthority", err)
		}
	})
	// A member deletes its avatar's property: the host admits it and relays it to member 3.
	a2, _ := n.peers[2].w.AvatarOf(2)
	n.do(2, func(w *World) {
		if err := w.Unset(a2, 0); err != nil {
			t.Fatal(err)
		}
	})
	n.pump()
	for i := PeerIndex(1); i <= 3; i++ {
		if _, ok := n.peers[i].w.Get(a2, 0); ok {
			t.Errorf("peer %d still has member 2's avatar pos", i)
		}
	}
	// Set brings it back.
	n.do(2, func(w *World) { _ = w.Set(a2, 0, []byte{3, 0, 0, 0}) })
	n.peers[2].flushUpdates()
	n.pump()
	n.peers[1].flushUpdates()
	n.pump()
	if v, _ := value(n.peers[3].w, a2, avatarPos); v != 3 {
		t.Errorf("member 3 sees pos %d after the set, want 3", v)
	}
	// A forged deletion of the host's box by member 3 is refused and does not spread.
	n.do(1, func(w *World) { _ = w.Set(box, 0, []byte{8, 0, 0, 0}) })
	n.peers[1].flushUpdates()
	n.pump()
	forged := crdt.AppendMessage(nil, &crdt.Message{Type: crdt.DeleteComponent, Entity: box, Component: 1100, Timestamp: n.peers[3].w.r.Clock() + 1})
	n.send(3, 1, link.Reliable, netmsg.AppendCrdtBatch(nil, &netmsg.CrdtBatch{Term: 1, Messages: forged}))
	if v, _ := value(n.peers[1].w, box, 1100); v != 8 {
		t.Errorf("host's box pos = %d after a forged deletion, want 8", v)
	}
	n.advance(2 * time.Second) // digests repair the forger's replica
	n.peers[1].flushUpdates()
	n.pump()
	sameHash(t, n)
}

func TestAppendChatLog(t *testing.T) {
	n, apps := apiRoom(t)
	// Without the host's AppendPolicy a member may not append to the room entity.
	n.do(2, func(w *World) {
		if err := w.Append(RoomEntity, chatComponent, []byte("hi")); err != nil {
			t.Fatal(err)
		}
	})
	n.pump()
	if got := n.peers[1].w.Values(RoomEntity, chatComponent); len(got) != 0 {
		t.Fatalf("host appended %q without a policy allowing it", got)
	}
	apps[1].openChat = true
	for i, line := range []string{"hello", "world"} {
		from := PeerIndex(2 + i)
		n.do(from, func(w *World) {
			if err := w.Append(RoomEntity, chatComponent, []byte(line)); err != nil {
				t.Fatal(err)
			}
		})
		n.pump()
	}
	n.do(1, func(w *World) { _ = w.Append(RoomEntity, chatComponent, []byte("from the host")) })
	n.pump()
	for i := PeerIndex(1); i <= 3; i++ {
		var got []string
		for _, v := range n.peers[i].w.Values(RoomEntity, chatComponent) {
			got = append(got, string(v))
		}
		if want := []string{"hello", "world", "from the host"}; !slices.Equal(got, want) {
			t.Errorf("peer %d chat = %q, want %q", i, got, want)
		}
		if !slices.ContainsFunc(apps[i].events, func(ev Event) bool { return ev.Kind == EventAppended && ev.Component == chatComponent }) {
			t.Errorf("peer %d heard no EventAppended", i)
		}
	}
	// An input stream on a member's own avatar needs no policy.
	a3, _ := n.peers[3].w.AvatarOf(3)
	n.do(3, func(w *World) { _ = w.Append(a3, 6000, []byte{1}) })
	n.pump()
	if got := n.peers[2].w.Values(a3, 6000); len(got) != 1 {
		t.Errorf("member 2 sees %d inputs of member 3, want 1", len(got))
	}
	// Bounds: the set keeps the newest DefaultAppendRetention values everywhere.
	n.do(1, func(w *World) {
		for i := range crdt.DefaultAppendRetention + 50 {
			_ = w.Append(RoomEntity, chatComponent, fmt.Appendf(nil, "line %d", i))
		}
	})
	n.pump()
	for i := PeerIndex(1); i <= 3; i++ {
		got := n.peers[i].w.Values(RoomEntity, chatComponent)
		if len(got) != crdt.DefaultAppendRetention || string(got[len(got)-1]) != fmt.Sprintf("line %d", crdt.DefaultAppendRetention+49) {
			t.Errorf("peer %d keeps %d values, last %q", i, len(got), got[len(got)-1])
		}
	}
	n.do(2, func(w *World) {
		if err := w.Append(RoomEntity, chatComponent, make([]byte, MaxAppendValue+1)); !errors.Is(err, ErrTooLarge) {
			t.Errorf("oversized append = %v", err)
		}
		if err := w.Append(RoomEntity, 1100, []byte("x")); !errors.Is(err, ErrBadComponent) {
			t.Errorf("append to a property = %v", err)
		}
		if err := w.Append(RoomEntity, schema.ComponentMeta, []byte("x")); !errors.Is(err, ErrBadComponent) {
			t.Errorf("append to meta = %v", err)
		}
	})
	sameHash(t, n)
}

func TestApplicationMessages(t *testing.T) {
	n, apps := apiRoom(t)
	check := func(who PeerIndex, want ...received) {
		t.Helper()
		got, _, _ := apps[who].take()
		if !slices.Equal(got, want) {
			t.Errorf("peer %d got messages %v, want %v", who, got, want)
		}
	}
	send := func(from, to PeerIndex, typ uint8, data string, reliable bool) {
		t.Helper()
		n.do(from, func(w *World) {
			if err := w.SendMessage(to, typ, []byte(data), reliable); err != nil {
				t.Fatalf("SendMessage(%d→%d): %v", from, to, err)
			}
		})
		n.pump()
	}
	send(2, 1, 130, "to host", true)
	send(2, 1, 131, "to host, unreliable", false)
	check(1, received{2, 130, "to host"}, received{2, 131, "to host, unreliable"})
	send(2, 3, 140, "typing…", true)
	check(3, received{2, 140, "typing…"})
	check(1)
	send(3, Everyone, 150, "all", false)
	check(1, received{3, 150, "all"})
	check(2, received{3, 150, "all"})
	check(3)
	send(1, Everyone, 200, "from the host", true)
	send(1, 2, 201, "just you", true)
	check(2, received{1, 200, "from the host"}, received{1, 201, "just you"})
	check(3, received{1, 200, "from the host"})
	// The host's RelayPolicy drops what it denies.
	apps[1].denyRelayType = 160
	send(2, 3, 160, "denied", true)
	check(3)
	// Bad input is a clear error at the sender.
	n.do(2, func(w *World) {
		if err := w.SendMessage(1, 127, nil, true); !errors.Is(err, ErrBadMessageType) {
			t.Errorf("type 127: %v", err)
		}
		if err := w.SendMessage(1, 128, make([]byte, MaxUnreliableMessage+1), false); !errors.Is(err, ErrTooLarge) {
			t.Errorf("oversized unreliable: %v", err)
		}
		if err := w.SendMessage(2, 128, nil, true); !errors.Is(err, ErrNoPeer) {
			t.Errorf("to itself: %v", err)
		}
	})
	n.do(1, func(w *World) {
		if err := w.SendMessage(9, 128, nil, true); !errors.Is(err, ErrNoPeer) {
			t.Errorf("host to an absent peer: %v", err)
		}
	})
	// A flood is cut at the budget, not the member: the host hands the app at most appBurst.
	n.advance(5 * time.Second) // the budget refills
	apps[1].take()
	n.do(2, func(w *World) {
		for range 3 * appBurst {
			_ = w.SendMessage(1, 128, []byte("x"), true)
		}
	})
	n.pump()
	if got, _, _ := apps[1].take(); len(got) != appBurst {
		t.Errorf("host took %d of a flood of %d messages, want %d", len(got), 3*appBurst, appBurst)
	}
	if n.peers[2].member.hostLink == nil || n.peers[2].member.hostLink.closing {
		t.Error("the flooding member lost its link; it should only lose messages")
	}
}

func TestActionsAndRPCs(t *testing.T) {
	n, apps := apiRoom(t)
	n.do(2, func(w *World) {
		if err := w.SendAction(7, []byte("jump")); err != nil {
			t.Fatal(err)
		}
		if err := w.SendRPC(9, []byte("call")); err != nil {
			t.Fatal(err)
		}
	})
	n.pump()
	_, actions, rpcs := apps[1].take()
	if want := []received{{2, 7, "jump"}}; !slices.Equal(actions, want) {
		t.Errorf("host actions %v, want %v", actions, want)
	}
	if want := []received{{2, 9, "call"}}; !slices.Equal(rpcs, want) {
		t.Errorf("host RPCs %v, want %v", rpcs, want)
	}
	n.do(1, func(w *World) {
		_ = w.SendAction(8, []byte("replay"))
		_ = w.BroadcastRPC(10, []byte("all"))
		if err := w.SendRPC(1, nil); !errors.Is(err, ErrNotHost) {
			t.Errorf("host SendRPC = %v, want ErrNotHost", err)
		}
		if err := w.BroadcastRPC(FirstSystemRPC, nil); !errors.Is(err, ErrNoAuthority) {
			t.Errorf("host BroadcastRPC of a system type = %v", err)
		}
	})
	n.pump()
	for i := PeerIndex(2); i <= 3; i++ {
		_, actions, rpcs := apps[i].take()
		if want := []received{{1, 8, "replay"}}; !slices.Equal(actions, want) {
			t.Errorf("member %d actions %v, want %v", i, actions, want)
		}
		if want := []received{{1, 10, "all"}}; !slices.Equal(rpcs, want) {
			t.Errorf("member %d RPCs %v, want %v", i, rpcs, want)
		}
	}
	n.do(2, func(w *World) {
		if err := w.SendAction(1, make([]byte, MaxAction+1)); !errors.Is(err, ErrTooLarge) {
			t.Errorf("oversized action: %v", err)
		}
		if err := w.SendRPC(FirstSystemRPC+1, nil); !errors.Is(err, ErrNoAuthority) {
			t.Errorf("member SendRPC of a system type = %v", err)
		}
	})
	// An app without ActionHandler hears Actions as RPCs.
	plain := &stepApp{table: stepSchemas()}
	var heard []uint32
	rec := &rpcRecorder{stepApp: plain, heard: &heard}
	n.join(4, rec, 1, 1)
	n.do(1, func(w *World) { _ = w.SendAction(11, nil) })
	n.pump()
	if !slices.Equal(heard, []uint32{11}) {
		t.Errorf("an app without ActionHandler heard %v, want the action as RPC 11", heard)
	}
}

type rpcRecorder struct {
	*stepApp
	heard *[]uint32
}

func (r *rpcRecorder) RPC(_ *World, _ PeerIndex, typ uint32, _ []byte) {
	*r.heard = append(*r.heard, typ)
}

func TestGrantAndRevoke(t *testing.T) {
	n, apps := apiRoom(t)
	box := apps[1].box
	n.do(1, func(w *World) {
		if err := w.Grant(box, 2); err != nil {
			t.Fatal(err)
		}
	})
	n.pump()
	for i := PeerIndex(1); i <= 3; i++ {
		if got := n.peers[i].w.Authority(box); got != 2 {
			t.Errorf("peer %d sees the box written by %d, want 2", i, got)
		}
	}
	if !n.peers[2].w.CanWrite(box) || n.peers[3].w.CanWrite(box) || n.peers[1].w.CanWrite(box) {
		t.Error("after the grant only member 2 may write the box")
	}
	n.do(2, func(w *World) { _ = w.Set(box, 0, []byte{5, 0, 0, 0}) })
	n.peers[2].flushUpdates()
	n.pump()
	n.peers[1].flushUpdates()
	n.pump()
	if v, _ := value(n.peers[3].w, box, 1100); v != 5 {
		t.Errorf("member 3 sees the granted box at %d, want member 2's 5", v)
	}
	// Member 3 cannot write it (locally refused; a forged update is rejected by the host).
	n.do(3, func(w *World) {
		if err := w.Set(box, 0, []byte{6, 0, 0, 0}); !errors.Is(err, ErrNoAuthority) {
			t.Errorf("member 3 Set of the granted box = %v", err)
		}
	})
	// Grants are the host's; avatars cannot be granted; absent peers cannot receive.
	a3, _ := n.peers[3].w.AvatarOf(3)
	n.do(2, func(w *World) {
		if err := w.Grant(box, 3); !errors.Is(err, ErrNotHost) {
			t.Errorf("member Grant = %v", err)
		}
	})
	n.do(1, func(w *World) {
		if err := w.Grant(a3, 2); !errors.Is(err, ErrNoAuthority) {
			t.Errorf("Grant of an avatar = %v", err)
		}
		if err := w.Grant(box, 9); !errors.Is(err, ErrNoPeer) {
			t.Errorf("Grant to an absent peer = %v", err)
		}
		if err := w.Revoke(box); err != nil {
			t.Fatal(err)
		}
	})
	n.pump()
	for i := PeerIndex(1); i <= 3; i++ {
		if got := n.peers[i].w.Authority(box); got != 1 {
			t.Errorf("peer %d sees the box written by %d after the revoke, want the host", i, got)
		}
	}
	if n.peers[2].w.CanWrite(box) {
		t.Error("member 2 still writes the box after the revoke")
	}
	sameHash(t, n)
}
