package voice

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
)

// silence returns an Ogg stream of n packets.
func silenceOgg(t testing.TB, n int) *bytes.Reader {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSilence(&b, n); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b.Bytes())
}

type fixture struct {
	t   *testing.T
	f   *Forwarder
	srv *httptest.Server
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	if testing.Verbose() {
		cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f.Handler())
	t.Cleanup(func() { srv.Close(); _ = f.Close() })
	return &fixture{t: t, f: f, srv: srv}
}

func (fx *fixture) dial(room, member string, publish bool, slots int) *Client {
	fx.t.Helper()
	cfg := DialConfig{Server: fx.srv.URL, Room: room, Member: member, Slots: slots, Stamp: true}
	if publish {
		cfg.Publish, cfg.Loop = silenceOgg(fx.t, 50), true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		fx.t.Fatalf("dial %s: %v", member, err)
	}
	fx.t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestForwardEveryoneHearsEveryone: with radius 0 every member hears every other, never itself,
// and the levels message reports each speaker's RFC 6464 level (what its packets carry).
func TestForwardEveryoneHearsEveryone(t *testing.T) {
	members := memberSet{"r": {"a/1": 1, "b/1": 2, "c/1": 3}}
	fx := newFixture(t, Config{Members: members})
	var cs []*Client
	for _, m := range []string{"a/1", "b/1", "c/1"} {
		cs = append(cs, fx.dial("r", m, true, 4))
	}
	poll.Until(t, 10*time.Second, "everyone hears everyone else", func() error {
		for i, c := range cs {
			sp := c.Speakers()
			for j, m := range []string{"a/1", "b/1", "c/1"} {
				if i == j {
					if sp[m].Packets > 0 {
						return fmt.Errorf("%d hears itself", i)
					}
					continue
				}
				if sp[m].Packets < 20 {
					return fmt.Errorf("%d heard %d packets of %s", i, sp[m].Packets, m)
				}
			}
		}
		return nil
	})
	poll.Until(t, 5*time.Second, "levels of the speakers", func() error {
		lv := cs[0].Levels()
		if lv["b/1"] != 30 || lv["c/1"] != 30 || lv["a/1"] != 30 {
			return fmt.Errorf("levels %v, want 30 for a, b and c", lv)
		}
		return nil
	})
}
