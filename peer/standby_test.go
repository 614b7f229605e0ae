package peer_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/demo/arena"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/signaling"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// muteStandby is a Transport whose second offering link (a member's standby link: the first is
// its link to the host) sends no signal, so it never opens.
type muteStandby struct {
	peer.Transport
	offers atomic.Int32
}

func (m *muteStandby) Connect(cfg peer.LinkConfig) (peer.Link, error) {
	if cfg.Offerer && m.offers.Add(1) == 2 {
		cfg.Signal = func(sigclient.SignalPayload) error { return nil }
	}
	return m.Transport.Connect(cfg)
}

// TestStandbyNotUpPromoted: a standby link that never opened, promoted when its member becomes
// host, is dropped after the connect timeout and the member links anew (before, the promoted
// link had no timeout and the member never synced with the new host).
func TestStandbyNotUpPromoted(t *testing.T) {
	r := newRoom(t, nil)
	standby := func(c *peer.Config) { c.Standby = true }
	host, killHost := r.killableHost(standby)
	var bots []*peer.Peer
	for i := range 3 {
		bots = append(bots, r.joinWith(r.ctx, fmt.Sprintf("bot%d", i), signaling.KindBot, arena.New(arena.Config{}), standby))
		poll.Until(t, 20*time.Second, "synced", func() error { return converged(append([]*peer.Peer{host}, bots...)) })
	}
	mute := &muteStandby{}
	last := r.joinWith(r.ctx, "muted", signaling.KindBot, arena.New(arena.Config{}), func(c *peer.Config) {
		standby(c)
		mute.Transport = c.Transport
		c.Transport = mute
	})
	bots = append(bots, last)
	poll.Until(t, 20*time.Second, "synced, the muted standby link made", func() error {
		if err := converged(append([]*peer.Peer{host}, bots...)); err != nil {
			return err
		}
		if n := mute.offers.Load(); n < 2 {
			return fmt.Errorf("%d links offered, want the host link and the standby link", n)
		}
		return nil
	})
	killHost()
	<-host.Done()
	poll.Until(t, 30*time.Second, "converged under a bot", func() error {
		for _, b := range bots {
			if st := b.Status(); st.Host == host.Status().Self || st.Host == 0 {
				return fmt.Errorf("bot %d follows no new host yet", st.Self)
			}
		}
		return converged(bots)
	})
	if st := last.Status(); st.IsHost || st.StandbyPromoted == 0 {
		t.Fatalf("the muted bot hosts (%t) or promoted no standby link (%d): the test did not exercise a promoted link that never opened", st.IsHost, st.StandbyPromoted)
	}
}
