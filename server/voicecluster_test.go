package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/concordrtc/concord/signaling"
)

// TestVoiceRelayBounds: the owner's side of a relayed voice request (docs/protocol.md §10 "In a
// cluster") refuses, without running its forwarder, a message over 101 KiB or an SDP over 64 KiB
// (400), a method other than POST/DELETE or a path outside /voice/ (400), a request beyond the 32
// running at once (429), and a room it does not own (503); a good one reaches the forwarder with
// its token, member and offer, and its reply (status, Location, body) comes back.
func TestVoiceRelayBounds(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)

	var reached atomic.Int32
	local := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer tok" || r.URL.Query().Get("member") != "a/d" || string(body) != "v=0 offer" {
			http.Error(w, "not the request sent", http.StatusTeapot)
			return
		}
		w.Header().Set("Location", "/voice/arena/S1")
		w.Header().Set("Content-Type", "application/sdp")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "v=0 answer")
	})
	v := &voiceRelay{nc: nc, local: local, sem: make(chan struct{}, DefaultVoiceMaxRelayed),
		owns:  func(room signaling.RoomID) bool { return room == "arena" },
		count: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relayed"}, []string{"side", "result"})}
	v.ctx, v.stop = context.WithCancel(context.Background())
	t.Cleanup(v.stop)
	sub, err := nc.Subscribe("test.voice", v.serveOwner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	ask := func(data []byte) voiceRelayReply {
		t.Helper()
		m, err := nc.Request("test.voice", data, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep voiceRelayReply
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	req := func(method, path string, body []byte) []byte {
		b, _ := json.Marshal(voiceRelayRequest{Method: method, Path: path, Auth: "Bearer tok", ContentType: "application/sdp", Body: body, Edge: "n2"})
		return b
	}
	good := req(http.MethodPost, "/voice/arena?member=a/d", []byte("v=0 offer"))

	rep := ask(good)
	if rep.Status != http.StatusCreated || rep.Location != "/voice/arena/S1" || string(rep.Body) != "v=0 answer" || rep.ContentType != "application/sdp" {
		t.Fatalf("a good relayed offer: %+v (%s)", rep, rep.Body)
	}
	// The largest offer the forwarder takes fits in a relay message.
	if rep := ask(req(http.MethodPost, "/voice/arena?member=a/d", bytes.Repeat([]byte("a"), voiceRelayMaxBody))); rep.Status != http.StatusTeapot {
		t.Errorf("an SDP of %d bytes: status %d (%s), want it to reach the forwarder", voiceRelayMaxBody, rep.Status, rep.Body)
	}
	for name, tc := range map[string]struct {
		data []byte
		want int
	}{
		"SDP over 64 KiB":      {req(http.MethodPost, "/voice/arena?member=a/d", bytes.Repeat([]byte("a"), voiceRelayMaxBody+1)), http.StatusBadRequest},
		"message over 101 KiB": {append(good[:len(good)-1:len(good)-1], []byte(`,"pad":"`+strings.Repeat("x", voiceRelayMaxMsg)+`"}`)...), http.StatusBadRequest},
		"not JSON":             {[]byte("POST /voice/arena"), http.StatusBadRequest},
		"GET":                  {req(http.MethodGet, "/voice/arena?member=a/d", nil), http.StatusBadRequest},
		"another path":         {req(http.MethodPost, "/api/rooms", []byte("v=0 offer")), http.StatusBadRequest},
		"a room not owned":     {req(http.MethodPost, "/voice/other?member=a/d", []byte("v=0 offer")), http.StatusServiceUnavailable},
	} {
		before := reached.Load()
		if rep := ask(tc.data); rep.Status != tc.want {
			t.Errorf("%s: status %d (%s), want %d", name, rep.Status, rep.Body, tc.want)
		}
		if reached.Load() != before {
			t.Errorf("%s: reached the forwarder", name)
		}
	}
	// The owner is busy: every slot taken.
	for range DefaultVoiceMaxRelayed {
		v.sem <- struct{}{}
	}
	if rep := ask(good); rep.Status != http.StatusTooManyRequests {
		t.Errorf("beyond %d relayed requests at once: status %d, want 429", DefaultVoiceMaxRelayed, rep.Status)
	}
	for range DefaultVoiceMaxRelayed {
		<-v.sem
	}
	if got := counterValue(v.count.WithLabelValues("owner", "bad")); got != 5 {
		t.Errorf("relayed{owner,bad} = %v, want 5", got)
	}
	if got := counterValue(v.count.WithLabelValues("owner", "busy")); got != 1 {
		t.Errorf("relayed{owner,busy} = %v, want 1", got)
	}
}

// TestVoiceRoom: the room of a voice path.
func TestVoiceRoom(t *testing.T) {
	for path, want := range map[string]signaling.RoomID{"/voice/arena": "arena", "/voice/arena/S1": "arena", "/voice/": "", "/api/rooms": ""} {
		if got := voiceRoom(path); got != want {
			t.Errorf("voiceRoom(%q) = %q, want %q", path, got, want)
		}
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}
