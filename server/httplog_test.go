package server

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/testkit/poll"
	"github.com/concordrtc/concord/internal/testkit/syncbuf"
	"github.com/concordrtc/concord/internal/testkit/testcert"
)

// TestHTTPErrorsInServerLog: net/http's own complaints — here a plain-HTTP request to the TLS
// listener, which any port scan causes — reach the server's structured log (component http,
// debug for a failed handshake) instead of net/http's default of a bare line on stderr.
func TestHTTPErrorsInServerLog(t *testing.T) {
	certFile, keyFile, _ := testcert.Write(t, net.ParseIP("127.0.0.1"))
	var logs syncbuf.Buffer
	s := startTestServer(t, Options{TLSCert: certFile, TLSKey: keyFile, Logger: zerolog.New(&logs).Level(zerolog.DebugLevel)})
	c, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the handshake error in the server's log", func() error {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"component":"http"`) && strings.Contains(line, "TLS handshake error") && strings.Contains(line, `"level":"debug"`) {
				return nil
			}
		}
		return fmt.Errorf("not in the log yet")
	})
}
