package turnserver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/internal/pionlog"
	"github.com/concordrtc/concord/internal/poll"
)

// syncBuffer is a bytes.Buffer that pion's goroutines and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// pion's own errors (here: a failed TLS handshake on the turns: port) reach the server's zerolog
// stream as JSON with a timestamp, the server's component and pion's scope, not on stderr.
func TestPionLogsThroughZerolog(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"turn.test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	s, err := New(Config{
		Addr: "127.0.0.1:0", MinPort: testMinPort, MaxPort: testMaxPort,
		TLSAddr: "127.0.0.1:0", TLS: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, TLSName: "turn.test",
		Logger: zerolog.New(&out).With().Timestamp().Logger(), // trace: pion's info must still be filtered
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Not TLS: pion's TURN server logs "TLS handshake failed" at error.
	conn, err := net.Dial("tcp4", s.tlsLn.String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	_ = conn.Close()

	var pion map[string]any
	poll.Until(t, 5*time.Second, "pion's TLS error in the log", func() error {
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				return fmt.Errorf("not JSON: %q", line)
			}
			if m[pionlog.ScopeField] != nil && strings.Contains(fmt.Sprint(m["message"]), "TLS handshake failed") {
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
