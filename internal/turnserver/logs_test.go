package turnserver

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/pionlog"
	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
)

// pion's own errors (here: a binding request with an unknown comprehension-required attribute,
// which pion logs at error) reach the server's zerolog stream as JSON with a timestamp, the
// server's component and pion's scope, not on stderr.
func TestPionLogsThroughZerolog(t *testing.T) {
	var out syncbuf.Buffer
	s, err := New(Config{
		Addr: "127.0.0.1:0", MinPort: testMinPort, MaxPort: testMaxPort,
		Logger: zerolog.New(&out).With().Timestamp().Logger(), // trace: pion's info must still be filtered
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	conn, err := net.Dial("udp4", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.RawAttribute{Type: 0x7ffe, Value: []byte{1, 2, 3, 4}})
	if _, err := conn.Write(req.Raw); err != nil {
		t.Fatal(err)
	}

	var pion map[string]any
	poll.Until(t, 5*time.Second, "pion's error in the log", func() error {
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				return fmt.Errorf("not JSON: %q", line)
			}
			if m[pionlog.ScopeField] != nil && strings.Contains(fmt.Sprint(m["message"]), "unknown comprehension-required attributes") {
				pion = m
				return nil
			}
		}
		return fmt.Errorf("not yet: %q", out.String())
	})
	if pion["level"] != "error" || pion["component"] != "turn" || pion["time"] == nil {
		t.Fatalf("pion's line: %v", pion)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, `"`+pionlog.ScopeField+`"`) && (strings.Contains(line, `"level":"info"`) || strings.Contains(line, `"level":"debug"`)) {
			t.Fatalf("pion's chatter went through: %s", line)
		}
	}
}
