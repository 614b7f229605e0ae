package link

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"regexp"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

var fingerprintLine = regexp.MustCompile(`a=fingerprint:\S+ \S+`)

// TestConnsShareCertificate: the Conns of one API offer one DTLS certificate (its fingerprint
// in their SDP), made once, instead of one made per connection while a joiner waits.
func TestConnsShareCertificate(t *testing.T) {
	api := mustAPI(t, Config{})
	defer api.Close()
	var fps []string
	for range 2 {
		c, err := api.NewOfferer(ConnConfig{Signal: func(Signal) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		fps = append(fps, fingerprintLine.FindString(c.pc.LocalDescription().SDP))
		_ = c.Close()
	}
	if fps[0] == "" || fps[0] != fps[1] {
		t.Fatalf("fingerprints %q, want one shared", fps)
	}
}

// TestCertificateRenewed: a shared certificate near its expiry is replaced before pion would
// refuse to make a connection with it.
func TestCertificateRenewed(t *testing.T) {
	api := mustAPI(t, Config{})
	defer api.Close()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	old, err := webrtc.NewCertificate(key, x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "WebRTC"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	api.cert = old
	got, err := api.certificate()
	if err != nil {
		t.Fatal(err)
	}
	if !got.Expires().After(time.Now().Add(certRenewal)) {
		t.Fatalf("certificate expiring %v kept", got.Expires())
	}
	c, err := api.NewOfferer(ConnConfig{Signal: func(Signal) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
}
