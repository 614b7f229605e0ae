package testcert

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
)

// A certificate Write made verifies for its IP with the pool, and not for another.
func TestWrite(t *testing.T) {
	certFile, keyFile, pool := Write(t, net.ParseIP("127.0.0.1"))
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("verify for 127.0.0.1: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.2"}); err == nil {
		t.Error("the certificate verifies for 127.0.0.2")
	}
}
