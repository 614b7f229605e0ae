package netlab_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/harness/netlab"
	"github.com/concordrtc/concord/internal/testkit/testcert"
	"github.com/concordrtc/concord/signaling"
)

// TestLab7Deploy runs README's "Deploy" in the lab: `serve` with a secret, TLS on 443, the
// dedicated host's WebRTC on UDP 7882, TURN on 3478 and TURN over TLS on 5349, exactly as the
// README's command (plus --turn-allow-private, the lab being a private range), and players with
// join tokens over HTTPS and WSS (the certificate trusted through SSL_CERT_FILE): a bot behind
// symmetric NAT B and one behind the UDP-dropping NAT C sync with the dedicated host, and a
// player's own `concord host` behind NAT A hosts a second room for a bot behind NAT B through
// the relay. /api/rooms answers over HTTPS to a join token, /metrics to the admin key.
func TestLab7Deploy(t *testing.T) {
	lab := netlab.Get(t)
	bin := concord(t)
	certFile, keyFile, pool := testcert.Write(t, netlab.ServerAddr.AsSlice())
	const secret = "netlab-deploy-scenario-secret-0123456789"
	token := func(room, user string, kind signaling.Kind) string {
		tok, err := signaling.IssueToken([]byte(secret), signaling.Claims{
			Room: signaling.RoomID(room), User: user, Kind: kind, MayHost: kind == signaling.KindHost,
			ExpiresAt: time.Now().Add(time.Hour),
		})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	trust := []string{"SSL_CERT_FILE=" + certFile} // a real certificate would be in the system roots
	startEnv(t, lab.Server, append(trust, "CONCORD_SECRET="+secret, "CONCORD_ADMIN_KEY="+labAdminKey), "serve", bin, "serve", "--addr", ":443", "--data", "",
		"--tls-cert", certFile, "--tls-key", keyFile,
		"--public-ip", netlab.ServerAddr.String(), "--udp", ":7882", "--turn", ":3478", "--turn-tls", ":5349",
		"--turn-allow-private", "100.64.0.0/10")
	base := "https://" + netlab.ServerAddr.String()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	arena := &api{base: base, client: client, bearer: token("arena", "observer", signaling.KindBot)}
	lobby := &api{base: base, client: client, bearer: token("lobby", "observer", signaling.KindBot), roomName: "lobby"}
	waitFor(t, 15*time.Second, "the server to answer over HTTPS", func() error {
		resp, err := arena.get("/healthz")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
	player := func(ns netlab.NS, name, room, user string, kind signaling.Kind, args ...string) {
		env := append(append([]string{}, trust...), "CONCORD_TOKEN="+token(room, user, kind))
		startEnv(t, ns, env, name, bin, append([]string{string(kind), "--server", base, "--room", room}, args...)...)
	}
	begin := time.Now()
	arena.waitHost(t, "host") // the dedicated host
	player(lab.B.NS, "bot-b", "arena", "botb1", signaling.KindBot, "--name", "botb", "-n", "1", "--move-for", "3s")
	player(lab.C.NS, "bot-c", "arena", "botc1", signaling.KindBot, "--name", "botc", "-n", "1", "--move-for", "3s")
	player(lab.A.NS, "host-a", "lobby", "host", signaling.KindHost)
	player(lab.B.NS, "bot-lobby", "lobby", "lobbyb1", signaling.KindBot, "--name", "lobbyb", "-n", "1", "--move-for", "3s")

	ra := arena.converged(t, 3, arenaEntities(2), 60*time.Second, func(r *room) error {
		for _, m := range r.Members {
			if m.PeerIndex != r.Host && m.Link == nil {
				return fmt.Errorf("member %d reports no link", m.PeerIndex)
			}
			if strings.HasPrefix(m.PeerID, "botc") && m.Link.Local != "relay" {
				return fmt.Errorf("the bot behind the UDP-dropping NAT is on %v, not the relay", m.Link)
			}
		}
		return nil
	})
	rl := lobby.converged(t, 2, arenaEntities(1), 60*time.Second, allRelayed)
	ops := &api{base: base, client: client, bearer: labAdminKey}
	allocs := ops.metrics(t, "concord_turn_allocations")[""]
	if allocs < 1 {
		t.Errorf("/metrics over HTTPS: %v TURN allocations", allocs)
	}
	t.Logf("README's Deploy in the lab: arena (dedicated host, bot behind NAT B, bot behind the UDP-dropping NAT) %v; lobby (concord host behind NAT A, bot behind NAT B) %v; all converged %v after the players started; %v TURN allocations",
		ra, rl, time.Since(begin).Round(time.Millisecond), allocs)
}
