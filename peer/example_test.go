package peer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
)

// greeter is the smallest App: the host spawns one entity holding a greeting; members only watch.
type greeter struct {
	hosting chan struct{} // closed when this peer starts hosting
	synced  chan struct{} // closed when this peer, a member, holds the host's world
}

func newGreeter() *greeter {
	return &greeter{hosting: make(chan struct{}), synced: make(chan struct{})}
}

var greeterSchemas = schema.MustTable(schema.Schema{ID: 1, Name: "sign", Properties: []schema.Property{
	{Name: "text", Component: 1024}, // Size 0: variable length
}})

func (g *greeter) Schemas() *schema.Table { return greeterSchemas }

func (g *greeter) HostStart(w *peer.World) {
	if len(w.EntitiesOf(1)) == 0 {
		_, _ = w.Spawn(1, nil, []byte("hello, room"))
	}
	closeOnce(g.hosting)
}

func (g *greeter) SpawnAvatar(*peer.World, peer.PeerInfo) (peer.Entity, error) { return 0, nil }
func (g *greeter) Tick(*peer.World, time.Duration)                             {}
func (g *greeter) RPC(*peer.World, peer.PeerIndex, uint32, []byte)             {}

// OnEvent makes greeter an EventHandler too: it hears when its peer, a member, has synced.
func (g *greeter) OnEvent(w *peer.World, ev peer.Event) {
	if ev.Kind == peer.EventSynced && !w.IsHost() {
		closeOnce(g.synced)
	}
}

// closeOnce closes ch unless it is closed: a peer hosts and syncs again after a migration. Only
// the peer's loop calls it.
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// ExampleNew joins a host and a member in one room over in-memory links and reads, on the member,
// what the host spawned. A real game passes peer.PionTransport{API: api} (see peer/link) instead.
func ExampleNew() {
	sig := signaling.New(signaling.Config{}) // open mode: no secret, a warning on the (nop) logger
	hs := httptest.NewServer(sig.Handler())
	defer hs.Close()
	defer sig.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	transport := &peer.MemoryTransport{}
	join := func(user string, kind signaling.Kind, app *greeter) *peer.Peer {
		p, err := peer.New(peer.Config{Server: hs.URL, Room: "demo", User: user, Kind: kind, App: app, Transport: transport})
		if err != nil {
			panic(err)
		}
		go func() { _ = p.Run(ctx) }()
		return p
	}
	// The first member of a room hosts it; the guest joins once it does.
	hostApp, guestApp := newGreeter(), newGreeter()
	host := join("host", signaling.KindHost, hostApp)
	select {
	case <-hostApp.hosting:
	case <-ctx.Done():
		fmt.Println("no host:", ctx.Err())
		return
	}
	m := join("guest", signaling.KindBot, guestApp)
	select {
	case <-guestApp.synced:
	case <-ctx.Done():
		fmt.Println("not synced:", ctx.Err())
		return
	}
	_ = m.Do(ctx, func(w *peer.World) {
		for _, e := range w.EntitiesOf(1) {
			text, _ := w.Get(e, 0)
			fmt.Printf("member sees %q; host: %v\n", text, w.IsHost())
		}
	})
	cancel()
	<-host.Done()
	<-m.Done()
	// Output: member sees "hello, room"; host: false
}
