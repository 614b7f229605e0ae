package netlab_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordrtc/concord/internal/harness/netlab"
)

// pageStatus is the part of window.concord.status() the scenarios read.
type pageStatus struct {
	Self     int    `json:"self"`
	Synced   bool   `json:"synced"`
	IsHost   bool   `json:"isHost"`
	Term     uint64 `json:"term"`
	Hash     string `json:"hash"`
	Entities int    `json:"entities"`
	// Pairs are the candidate types of each link's selected pair, from Chromium's getStats,
	// by remote peer index.
	Pairs map[string]linkTypes `json:"pairs"`
	// LocalCandidates are "type address" of every local candidate Chromium gathered.
	LocalCandidates []string `json:"localCandidates"`
}

// checkCandidates fails t unless every local candidate of the page has a lab address (or none):
// never an mDNS name, never an address outside the lab.
func checkCandidates(t *testing.T, st pageStatus) {
	t.Helper()
	checkCandidatesOf(t, st, false)
}

// checkCandidatesOf is checkCandidates; with mdns, a host candidate may also be an mDNS name (a
// stock browser's: it names no address at all).
func checkCandidatesOf(t *testing.T, st pageStatus, mdns bool) {
	t.Helper()
	if len(st.LocalCandidates) == 0 {
		t.Fatal("Chromium reports no local candidate")
	}
	lab := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10")}
	for _, c := range st.LocalCandidates {
		typ, addr, _ := strings.Cut(c, " ")
		if mdns && (typ == "host" && strings.HasSuffix(addr, ".local") || typ == "prflx" && addr == "(redacted)") {
			continue // Firefox's stats name no address for these
		}
		a, err := netip.ParseAddr(addr)
		// An unspecified address is Chromium's placeholder for a family it has no route for
		// (IPv6 is off in the lab): nothing can be sent to it.
		if err != nil || !a.IsUnspecified() && !slices.ContainsFunc(lab, func(p netip.Prefix) bool { return p.Contains(a) }) {
			t.Errorf("Chromium gathered the candidate %q: not a lab address (all: %q)", c, st.LocalCandidates)
		}
	}
}

// startBrowser runs web/e2e/lab.mjs (Chromium with one page of the client) in ns, or skips t when
// node, playwright-core or Chromium is missing.
func startBrowser(t *testing.T, ns netlab.NS, user string) *proc {
	t.Helper()
	return startBrowserOf(t, ns, user, "chromium")
}

// startBrowserOf is startBrowser with the browser named: "chromium" (playwright-core) or
// "firefox" (Firefox ESR with stock prefs, puppeteer-core), and more of lab.mjs's flags (--voice).
func startBrowserOf(t *testing.T, ns netlab.NS, user, browser string, flags ...string) *proc {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping: no node (apt-get install nodejs)")
	}
	e2e, err := filepath.Abs("../../../web/e2e")
	if err != nil {
		t.Fatal(err)
	}
	driver, exe, env := "playwright-core", "/usr/bin/chromium", "CHROMIUM"
	if browser == "firefox" {
		driver, exe, env = "puppeteer-core", "/usr/bin/firefox-esr", "FIREFOX"
	}
	if _, err := os.Stat(filepath.Join(e2e, "node_modules", driver)); err != nil {
		t.Skipf("skipping: no %s (cd web/e2e && npm ci)", driver)
	}
	if v := os.Getenv(env); v != "" {
		exe = v
	}
	if _, err := os.Stat(exe); err != nil {
		t.Skipf("skipping: no %s at %s (apt-get install %s)", browser, exe, filepath.Base(exe))
	}
	// The browser's profile goes to the lab's TempDir, which the lab removes even after a kill.
	p := startEnv(t, ns, []string{"TMPDIR=" + netlab.Get(t).TempDir()}, browser+"-"+user, node,
		append([]string{filepath.Join(e2e, "lab.mjs"), "--server", serverURL, "--user", user, "--browser", browser}, flags...)...)
	waitFor(t, 30*time.Second, user+"'s page to join", func() error {
		if strings.Contains(p.out.String(), "\njoined ") || strings.HasPrefix(p.out.String(), "joined ") {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("lab.mjs exited (%v): %s", p.err, tail(&p.out, 5))
		}
		return fmt.Errorf("not yet: %s", tail(&p.out, 2))
	})
	return p
}

// lastStatus is the page's latest status line.
func lastStatus(p *proc) (pageStatus, error) {
	lines := strings.Split(p.out.String(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if s, ok := strings.CutPrefix(lines[i], "status "); ok {
			var st pageStatus
			return st, json.Unmarshal([]byte(s), &st)
		}
	}
	return pageStatus{}, fmt.Errorf("no status yet")
}

// TestLab1ChromiumBehindNAT is scenario 1: Chromium behind symmetric NAT A joins `serve
// --public-ip` and its dedicated host, syncs to the room's hash, and reports its selected pair
// (in /api/rooms; Chromium's own getStats must say the same).
func TestLab1ChromiumBehindNAT(t *testing.T) {
	lab := netlab.Get(t)
	serve(t, lab)
	begin := time.Now()
	b := startBrowser(t, lab.A.NS, "alice")
	var st pageStatus
	r := converged(t, 2, arenaEntities(1), 45*time.Second, func(r *room) error {
		var err error
		if st, err = lastStatus(b); err != nil {
			return err
		}
		if !st.Synced || st.Hash != r.Members[0].Replica.Hash || st.Term != r.Term {
			return fmt.Errorf("the page says %+v", st)
		}
		if p, ok := st.Pairs[fmt.Sprint(r.Host)]; !ok || p.Local == "" || p.Remote == "" {
			return fmt.Errorf("Chromium has no selected pair to the host yet: %+v", st.Pairs)
		}
		return nil
	})
	checkCandidates(t, st)
	page := st.Pairs[fmt.Sprint(r.Host)]
	var reported *linkTypes
	for _, m := range r.Members {
		if m.Kind == "browser" {
			reported = m.Link
		}
	}
	took := time.Since(begin).Round(time.Millisecond)
	if reported == nil {
		t.Skipf("Chromium behind NAT A synced with the dedicated host in %v over the pair %v (getStats), but the JS client does not report its selected pair in /api/rooms yet (docs/protocol.md §4 GET /api/rooms \"link\")", took, &page)
	}
	if *reported != page {
		t.Fatalf("/api/rooms says the browser's pair is %v, Chromium's getStats %v", reported, &page)
	}
	t.Logf("Chromium behind NAT A synced with the dedicated host in %v, selected pair %v, local candidates %q: %v", took, reported, st.LocalCandidates, r)
}

// TestLab1FirefoxBehindNAT: stock Firefox (no pref changed) behind symmetric NAT A joins `serve
// --public-ip` and its dedicated host, and syncs to the room's hash, its pair as /api/rooms reports
// it. Firefox offers its host candidates as mDNS names, pairs only network addresses, and is driven
// over WebDriver BiDi: another WebRTC stack (nICEr, usrsctp) than Chromium's.
func TestLab1FirefoxBehindNAT(t *testing.T) {
	lab := netlab.Get(t)
	serve(t, lab)
	begin := time.Now()
	b := startBrowserOf(t, lab.A.NS, "fiona", "firefox")
	var st pageStatus
	r := converged(t, 2, arenaEntities(1), 60*time.Second, func(r *room) error {
		var err error
		if st, err = lastStatus(b); err != nil {
			return err
		}
		if !st.Synced || st.Hash != r.Members[0].Replica.Hash || st.Term != r.Term {
			return fmt.Errorf("the page says %+v", st)
		}
		for _, m := range r.Members {
			if m.Kind == "browser" && m.Link == nil {
				return fmt.Errorf("the page has not reported its pair yet")
			}
		}
		return nil
	})
	checkCandidatesOf(t, st, true)
	t.Logf("Firefox behind NAT A synced with the dedicated host in %v, local candidates %q: %v",
		time.Since(begin).Round(time.Millisecond), st.LocalCandidates, r)
}

// TestLab3ChromiumHostsAcrossNATs is scenario 3: Chromium behind NAT A hosts the room (no
// dedicated host); three Go bots behind NAT B reach it through the relay and converge.
func TestLab3ChromiumHostsAcrossNATs(t *testing.T) { hostsAcrossNATs(t, "chromium") }

// TestLab3FirefoxHostsAcrossNATs is scenario 3 with stock Firefox as the host: both ends behind
// symmetric NATs, so every link goes through the embedded TURN relay.
func TestLab3FirefoxHostsAcrossNATs(t *testing.T) { hostsAcrossNATs(t, "firefox") }

func hostsAcrossNATs(t *testing.T, browser string) {
	lab := netlab.Get(t)
	bin := concord(t)
	serve(t, lab, "--dedicated-host=false")
	b := startBrowserOf(t, lab.A.NS, "alice", browser)
	waitFor(t, 15*time.Second, "the browser to host", func() error {
		st, err := lastStatus(b)
		if err != nil || !st.IsHost {
			return fmt.Errorf("status %+v (%v)", st, err)
		}
		return nil
	})
	begin := time.Now()
	start(t, lab.B.NS, "bots", bin, "bot", "--server", serverURL, "--room", "arena", "-n", "3", "--move-for", "3s")
	r := converged(t, 4, arenaEntities(4), 60*time.Second, func(r *room) error {
		if r.hostMember().Kind != "browser" {
			return fmt.Errorf("the host is a %s", r.hostMember().Kind)
		}
		return allRelayed(r)
	})
	st, err := lastStatus(b)
	if err != nil || !st.IsHost || st.Hash != r.Members[0].Replica.Hash {
		t.Fatalf("the page says %+v (%v), the room %v", st, err, r)
	}
	checkCandidatesOf(t, st, browser == "firefox")
	// The browser's own view of its links to the bots agrees: through the relay.
	for _, m := range r.Members {
		if p, ok := st.Pairs[fmt.Sprint(m.PeerIndex)]; m.PeerIndex != r.Host && (!ok || !p.relayed()) {
			t.Errorf("%s's pair to bot %d is %v (getStats: %+v)", browser, m.PeerIndex, &p, st.Pairs)
		}
	}
	t.Logf("%s host behind NAT A, 3 bots behind NAT B converged through the relay in %v: %v", browser, time.Since(begin).Round(time.Millisecond), r)
}
