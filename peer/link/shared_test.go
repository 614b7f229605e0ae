package link

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
)

var fingerprintLine = regexp.MustCompile(`a=fingerprint:\S+ \S+`)

// offerFingerprint makes an offerer of api and returns the fingerprint of its offer.
func offerFingerprint(t *testing.T, api *API) string {
	t.Helper()
	sigs := make(chan Signal, 64)
	c, err := api.NewOfferer(ConnConfig{Signal: queueTo(sigs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-sigs:
			if s.Kind == SignalOffer {
				fp := fingerprintLine.FindString(s.SDP)
				if fp == "" {
					t.Fatalf("an offer without a fingerprint:\n%s", s.SDP)
				}
				return fp
			}
		case <-deadline:
			t.Fatal("no offer within 10s")
		}
	}
}

// TestAPISharesCertificate: the connections of one API present one DTLS certificate (its
// fingerprint in their offers), made once, not one per connection; another API has its own.
func TestAPISharesCertificate(t *testing.T) {
	defer test.TimeOut(30 * time.Second).Stop()
	a := mustAPI(t, Config{Logger: testLogger(t)})
	defer a.Close()
	b := mustAPI(t, Config{Logger: testLogger(t)})
	defer b.Close()
	if err := a.Prepare(); err != nil {
		t.Fatal(err)
	}
	prepared, err := a.cert.get()
	if err != nil {
		t.Fatal(err)
	}
	first, second := offerFingerprint(t, a), offerFingerprint(t, a)
	if fps, err := prepared[0].GetFingerprints(); err != nil || !strings.Contains(strings.ToUpper(first), strings.ToUpper(fps[0].Value)) {
		t.Errorf("the offer's %s is not the prepared certificate's (%v, %v)", first, fps, err)
	}
	if first != second {
		t.Errorf("two connections of one API: %s and %s, want one certificate", first, second)
	}
	if other := offerFingerprint(t, b); other == first {
		t.Errorf("two APIs share the certificate %s", other)
	}
}

// TestSharedCertRefresh: the certificate is made again once it is certRefresh old, and not before.
func TestSharedCertRefresh(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := sharedCert{now: func() time.Time { return now }}
	first, err := c.get()
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(certRefresh - time.Second)
	if again, _ := c.get(); &again[0] != &first[0] {
		t.Error("a new certificate before certRefresh")
	}
	now = now.Add(time.Second)
	fresh, err := c.get()
	if err != nil {
		t.Fatal(err)
	}
	if fresh[0].Equals(first[0]) {
		t.Error("the same certificate after certRefresh")
	}
	// pion's certificate lasts a month from the real clock's now, well past a refresh.
	if exp := fresh[0].Expires(); !exp.After(time.Now().Add(certRefresh)) {
		t.Errorf("the certificate expires at %v, before the next refresh", exp)
	}
}

// TestSharedNetRefresh: the interface list is read once per netRefresh, not per call.
func TestSharedNetRefresh(t *testing.T) {
	n, err := newSharedNet()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	n.now = func() time.Time { return now }
	n.at = now
	first := n.current()
	if _, err := n.Interfaces(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(netRefresh - time.Millisecond)
	if n.current() != first {
		t.Error("the list read again before netRefresh")
	}
	now = now.Add(time.Millisecond)
	if n.current() == first {
		t.Error("the list not read again after netRefresh")
	}
	if ifs, err := n.Interfaces(); err != nil || len(ifs) == 0 {
		t.Errorf("Interfaces = %d, %v: want at least loopback", len(ifs), err)
	}
	if _, err := n.InterfaceByName("lo"); err != nil {
		t.Errorf("InterfaceByName(lo): %v", err)
	}
}
