package peer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// The application API over real links (pion, on loopback) and over the memory transport: a Go
// dedicated host and two bots exchange messages, Actions and RPCs, append to a chat log, delete
// a property, and the host grants and revokes a box.

const (
	apiBox    schema.ID = 1
	apiAvatar schema.ID = 2
	apiChat             = crdt.ComponentID(5000)
)

var apiSchemas = schema.MustTable(
	schema.Schema{ID: apiBox, Name: "box", Properties: []schema.Property{{Name: "pos", Component: 1100, Size: 4}}},
	schema.Schema{ID: apiAvatar, Name: "avatar", Properties: []schema.Property{{Name: "pos", Component: 1200, Size: 4}}},
)

type heard struct {
	kind string // "msg", "action", "rpc"
	from peer.PeerIndex
	typ  uint32
	data string
}

type apiLinkApp struct {
	mu    sync.Mutex
	heard []heard
}

func (a *apiLinkApp) Schemas() *schema.Table { return apiSchemas }
func (a *apiLinkApp) HostStart(w *peer.World) {
	if !w.Exists(peer.RoomEntity) {
		_ = w.SpawnRoom(apiBox, nil, []byte{0, 0, 0, 0})
		_, _ = w.Spawn(apiBox, nil, []byte{1, 0, 0, 0})
	}
}
func (a *apiLinkApp) SpawnAvatar(w *peer.World, p peer.PeerInfo) (peer.Entity, error) {
	if p.Kind == "host" {
		return 0, nil
	}
	return w.Spawn(apiAvatar, nil, []byte{0, 0, 0, 0})
}
func (a *apiLinkApp) Tick(*peer.World, time.Duration) {}
func (a *apiLinkApp) add(h heard) {
	a.mu.Lock()
	a.heard = append(a.heard, h)
	a.mu.Unlock()
}
func (a *apiLinkApp) RPC(_ *peer.World, from peer.PeerIndex, typ uint32, data []byte) {
	a.add(heard{"rpc", from, typ, string(data)})
}
func (a *apiLinkApp) Action(_ *peer.World, from peer.PeerIndex, typ uint32, data []byte) {
	a.add(heard{"action", from, typ, string(data)})
}
func (a *apiLinkApp) Message(_ *peer.World, from peer.PeerIndex, typ uint8, data []byte) {
	a.add(heard{"msg", from, uint32(typ), string(data)})
}
func (a *apiLinkApp) AllowAppend(_ *peer.World, _ peer.PeerIndex, e peer.Entity, c crdt.ComponentID, _ []byte) bool {
	return e == peer.RoomEntity && c == apiChat
}

// has waits until app heard h.
func (a *apiLinkApp) has(t *testing.T, who string, h heard) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("%s hears %+v", who, h), func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if slices.Contains(a.heard, h) {
			return nil
		}
		return fmt.Errorf("heard %+v", a.heard)
	})
}

// on runs fn on p's loop and fails the test on its error.
func on(t *testing.T, p *peer.Peer, fn func(w *peer.World) error) {
	t.Helper()
	var err error
	if derr := p.Do(context.Background(), func(w *peer.World) { err = fn(w) }); derr != nil {
		t.Fatal(derr)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// until polls fn on p's loop.
func until(t *testing.T, p *peer.Peer, what string, fn func(w *peer.World) error) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, func() error {
		var err error
		if derr := p.Do(context.Background(), func(w *peer.World) { err = fn(w) }); derr != nil {
			return derr
		}
		return err
	})
}

func TestApplicationAPIOverLinks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		memory bool
	}{{"pion", false}, {"memory", true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRoom(t, nil)
			mem := &peer.MemoryTransport{} // one for the room: its links meet inside it
			tweak := func(c *peer.Config) {
				if tc.memory {
					c.Transport = mem
				}
			}
			hostApp, aApp, bApp := &apiLinkApp{}, &apiLinkApp{}, &apiLinkApp{}
			host := r.joinWith(r.ctx, "host", signaling.KindHost, hostApp, tweak)
			poll.Until(t, 5*time.Second, "host elected", func() error {
				if !host.Status().IsHost {
					return fmt.Errorf("not host yet")
				}
				return nil
			})
			a := r.joinWith(r.ctx, "a", signaling.KindBot, aApp, tweak)
			b := r.joinWith(r.ctx, "b", signaling.KindBot, bApp, tweak)
			poll.Until(t, 20*time.Second, "room synced", func() error { return converged(r.peers) })
			hi, ai, bi := host.Status().Self, a.Status().Self, b.Status().Self

			// Messages: to the host, to one member through the host, to everyone.
			on(t, a, func(w *peer.World) error { return w.SendMessage(hi, 130, []byte("to host"), true) })
			hostApp.has(t, "host", heard{"msg", ai, 130, "to host"})
			on(t, a, func(w *peer.World) error { return w.SendMessage(bi, 140, []byte("typing…"), true) })
			bApp.has(t, "b", heard{"msg", ai, 140, "typing…"})
			on(t, b, func(w *peer.World) error { return w.SendMessage(peer.Everyone, 150, []byte("all"), true) })
			hostApp.has(t, "host", heard{"msg", bi, 150, "all"})
			aApp.has(t, "a", heard{"msg", bi, 150, "all"})
			on(t, host, func(w *peer.World) error { return w.SendMessage(peer.Everyone, 200, []byte("from the host"), true) })
			aApp.has(t, "a", heard{"msg", hi, 200, "from the host"})
			bApp.has(t, "b", heard{"msg", hi, 200, "from the host"})
			// Unreliable: resent until one arrives (a datagram may be lost).
			poll.Until(t, 10*time.Second, "an unreliable message reaches b", func() error {
				_ = a.Do(context.Background(), func(w *peer.World) { _ = w.SendMessage(bi, 160, []byte("fast"), false) })
				bApp.mu.Lock()
				defer bApp.mu.Unlock()
				if slices.Contains(bApp.heard, heard{"msg", ai, 160, "fast"}) {
					return nil
				}
				return fmt.Errorf("not yet")
			})

			// Actions and RPCs both ways.
			on(t, a, func(w *peer.World) error { return w.SendAction(7, []byte("jump")) })
			hostApp.has(t, "host", heard{"action", ai, 7, "jump"})
			on(t, a, func(w *peer.World) error { return w.SendRPC(9, []byte("call")) })
			hostApp.has(t, "host", heard{"rpc", ai, 9, "call"})
			on(t, host, func(w *peer.World) error {
				if err := w.SendAction(8, []byte("replay")); err != nil {
					return err
				}
				return w.BroadcastRPC(10, []byte("all"))
			})
			for name, app := range map[string]*apiLinkApp{"a": aApp, "b": bApp} {
				app.has(t, name, heard{"action", hi, 8, "replay"})
				app.has(t, name, heard{"rpc", hi, 10, "all"})
			}

			// A chat log appended by a member, admitted by the host's AppendPolicy.
			on(t, b, func(w *peer.World) error { return w.Append(peer.RoomEntity, apiChat, []byte("hello")) })
			for name, p := range map[string]*peer.Peer{"host": host, "a": a, "b": b} {
				until(t, p, name+" sees the chat line", func(w *peer.World) error {
					if v := w.Values(peer.RoomEntity, apiChat); len(v) != 1 || string(v[0]) != "hello" {
						return fmt.Errorf("chat %q", v)
					}
					return nil
				})
			}

			// A granted box: a writes it, b sees it, then the host takes it back.
			var box peer.Entity
			on(t, host, func(w *peer.World) error {
				box = w.EntitiesOf(apiBox)[1]
				return w.Grant(box, ai)
			})
			until(t, a, "a may write the box", func(w *peer.World) error {
				if !w.CanWrite(box) {
					return fmt.Errorf("not yet")
				}
				return w.Set(box, 0, []byte{42, 0, 0, 0})
			})
			until(t, b, "b sees a's write to the box", func(w *peer.World) error {
				if v, ok := w.Get(box, 0); !ok || v[0] != 42 {
					return fmt.Errorf("box %v", v)
				}
				return nil
			})
			on(t, host, func(w *peer.World) error { return w.Revoke(box) })
			until(t, a, "a lost the box", func(w *peer.World) error {
				if w.CanWrite(box) {
					return fmt.Errorf("still writes it")
				}
				return nil
			})

			// a deletes its avatar's position; every peer sees it gone.
			var av peer.Entity
			on(t, a, func(w *peer.World) error {
				av, _ = w.AvatarOf(ai)
				return w.Unset(av, 0)
			})
			until(t, b, "b sees a's avatar position deleted", func(w *peer.World) error {
				if _, ok := w.Get(av, 0); ok {
					return fmt.Errorf("still there")
				}
				return nil
			})
			poll.Until(t, 20*time.Second, "replicas equal", func() error { return converged(r.peers) })
		})
	}
}
