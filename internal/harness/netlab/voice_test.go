package netlab_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/harness/netlab"
)

// voiceStatus is the voice part of a lab.mjs status line (lab.mjs --voice).
type voiceStatus struct {
	PeerID string `json:"peerId"`
	Voice  *struct {
		State       string `json:"state"`
		Publishing  bool   `json:"publishing"`
		Muted       bool   `json:"muted"`
		PacketsSent int    `json:"packetsSent"`
		Note        string `json:"note"`
		Slots       []struct {
			Mid             string `json:"mid"`
			Member          string `json:"member"`
			PacketsReceived int    `json:"packetsReceived"`
		} `json:"slots"`
		// Pair is the voice connection's selected candidate pair (Chromium's getStats); Protocol
		// is the local candidate's relay protocol for a relay candidate (udp, tcp, tls).
		Pair *struct {
			Local    string `json:"local"`
			Remote   string `json:"remote"`
			Protocol string `json:"protocol"`
		} `json:"pair"`
	} `json:"voice"`
}

// botVoiceLine is `concord bot`'s voice summary (every second): sessions, packets sent, heard, speakers.
var botVoiceLine = regexp.MustCompile(`voice: (\d+)/\d+ sessions, \d+ packets sent, (\d+) heard from (\d+) speakers`)

// lastVoice is the page's latest voice status.
func lastVoice(p *proc) (voiceStatus, error) {
	lines := strings.Split(p.out.String(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if s, ok := strings.CutPrefix(lines[i], "status "); ok {
			var st voiceStatus
			if err := json.Unmarshal([]byte(s), &st); err != nil {
				return st, err
			}
			if st.Voice == nil {
				return st, fmt.Errorf("no voice session in the status")
			}
			return st, nil
		}
	}
	return voiceStatus{}, fmt.Errorf("no status yet")
}

// receivedFrom is what st's slots received of member (packets), and whether a slot carries it.
func (st voiceStatus) receivedFrom(member string) (int, bool) {
	for _, s := range st.Voice.Slots {
		if s.Member == member {
			return s.PacketsReceived, true
		}
	}
	return 0, false
}

// TestLabVoice: voice through the server's forwarder from behind the lab's NATs (docs/protocol.md
// §10). Chromium behind symmetric NAT A and Chromium behind NAT C, which drops all UDP, join voice
// on the arena page (fake microphones, unmuted; radius 0: everyone hears everyone). C's voice
// connection can only be a relay candidate of the embedded TURN server over TCP; A reaches the
// forwarder on the server's public address. Each must receive the other's RTP, growing, on the
// slot the forwarder says carries the other; a Go listener (concord bot --voice-listen) behind
// NAT C too hears both: its voice connection can only be a relay of the TURN server the member
// was handed in joined (voice.DialConfig.ICEServers, the bot's Peer.ICEServers).
func TestLabVoice(t *testing.T) {
	lab := netlab.Get(t)
	serve(t, lab, "--voice-radius", "0")
	begin := time.Now()
	a := startBrowserOf(t, lab.A.NS, "alice", "chromium", "--voice")
	c := startBrowserOf(t, lab.C.NS, "carol", "chromium", "--voice")
	// A Go member behind NAT C (no UDP out) listens to both, through TURN over TCP.
	bot := start(t, lab.C.NS, "bot", concord(t), "bot", "--server", serverURL, "--room", "arena", "-n", "1", "--move-for", "1s", "--voice-listen")
	var sa, sc voiceStatus
	live := func() error {
		var err error
		if sa, err = lastVoice(a); err != nil {
			return fmt.Errorf("alice: %w (%s)", err, tail(&a.out, 2))
		}
		if sc, err = lastVoice(c); err != nil {
			return fmt.Errorf("carol: %w (%s)", err, tail(&c.out, 2))
		}
		if sa.Voice.State != "live" || sc.Voice.State != "live" {
			return fmt.Errorf("voice: alice %s (%s), carol %s (%s)", sa.Voice.State, sa.Voice.Note, sc.Voice.State, sc.Voice.Note)
		}
		return nil
	}
	// Both hear each other, with packets.
	waitFor(t, 60*time.Second, "alice and carol to receive each other's voice", func() error {
		if err := live(); err != nil {
			return err
		}
		na, oka := sa.receivedFrom(sc.PeerID)
		nc, okc := sc.receivedFrom(sa.PeerID)
		if !oka || !okc || na < 50 || nc < 50 {
			return fmt.Errorf("alice got %d from carol (slot %v), carol got %d from alice (slot %v); sent %d / %d",
				na, oka, nc, okc, sa.Voice.PacketsSent, sc.Voice.PacketsSent)
		}
		return nil
	})
	took := time.Since(begin).Round(time.Millisecond)
	if p := sc.Voice.Pair; p == nil || p.Local != "relay" || p.Protocol != "tcp" {
		t.Errorf("carol's voice pair is %+v, want a local relay over TCP (UDP cannot leave home C)", sc.Voice.Pair)
	}
	// And it keeps flowing: two seconds later each received at least 50 more packets (20 ms each).
	na0, _ := sa.receivedFrom(sc.PeerID)
	nc0, _ := sc.receivedFrom(sa.PeerID)
	waitFor(t, 10*time.Second, "more voice both ways", func() error {
		if err := live(); err != nil {
			return err
		}
		na, _ := sa.receivedFrom(sc.PeerID)
		nc, _ := sc.receivedFrom(sa.PeerID)
		if na < na0+50 || nc < nc0+50 {
			return fmt.Errorf("alice %d → %d, carol %d → %d", na0, na, nc0, nc)
		}
		return nil
	})
	var heard string
	waitFor(t, 30*time.Second, "the Go listener behind NAT C to hear alice and carol", func() error {
		m := botVoiceLine.FindAllStringSubmatch(bot.out.String(), -1)
		if len(m) == 0 {
			return fmt.Errorf("no voice summary yet: %s", tail(&bot.out, 2))
		}
		last := m[len(m)-1]
		if n, _ := strconv.Atoi(last[2]); last[3] != "2" || n < 100 {
			return fmt.Errorf("%s", last[0])
		}
		heard = last[0]
		return nil
	})
	na, _ := sa.receivedFrom(sc.PeerID)
	nc, _ := sc.receivedFrom(sa.PeerID)
	t.Logf("voice behind NAT A (pair %+v) and the UDP-dropping NAT C (pair %+v) both ways in %v: alice received %d packets from carol, carol %d from alice; the Go listener behind NAT C (through TURN): %s",
		sa.Voice.Pair, sc.Voice.Pair, took, na, nc, heard)
}
