package turnserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/turn/v5"
)

// TURN over TLS on the second port allocates a relay, and its URL names the certificate's host.
func TestTURNOverTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"turn.test"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	s := newTestServer(t, Config{TLSAddr: "127.0.0.1:0", TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, TLSName: "turn.test"})
	urls := s.URLs()
	if len(urls) != 3 || !strings.HasPrefix(urls[2], "turns:turn.test:") {
		t.Fatalf("URLs = %v", urls)
	}
	port := strings.TrimSuffix(strings.TrimPrefix(urls[2], "turns:turn.test:"), "?transport=tcp")
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	conn, err := tls.Dial("tcp4", "127.0.0.1:"+port, &tls.Config{RootCAs: pool, ServerName: "turn.test"})
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	u, p := s.Credentials(Member{User: "tls", Device: "p1"})
	c := newClientOn(t, turn.NewSTUNConn(conn), conn.RemoteAddr().String(), u, p)
	allocate(t, c)
	if s.Stats().Allocations != 1 {
		t.Fatalf("stats %+v", s.Stats())
	}
}
