package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// NamePrefix starts the name of every namespace a lab creates; the creating process's pid follows.
const NamePrefix = "clab"

// Addresses of the lab.
var (
	// PublicNet is the "internet": the bridge's subnet.
	PublicNet = netip.MustParsePrefix("100.64.0.0/24")
	// ServerAddr is the public server's address.
	ServerAddr = netip.MustParseAddr("100.64.0.10")
	// PublicAddr is the address of a member on the public side, without NAT (the control
	// namespace that Main runs tests in).
	PublicAddr = netip.MustParseAddr("100.64.0.20")
)

// Nodes is the number of cluster nodes of a lab (Lab.Nodes).
const Nodes = 3

// NodeAddr returns the address of cluster node i (0-based): 100.64.0.31, .32, .33.
func NodeAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{100, 64, 0, byte(31 + i)}) }

// ErrUnavailable wraps the reason a lab cannot be built on this machine.
var ErrUnavailable = errors.New("netlab: no lab on this machine")

// Home is a home network behind a NAT router.
type Home struct {
	// NS is the home's namespace: one machine with Addr on eth0.
	NS NS
	// Router is the NAT router's namespace.
	Router NS
	// Addr is the home machine's (private) address.
	Addr netip.Addr
	// WAN is the router's public address: what the server sees as the home's source address.
	WAN netip.Addr
	// Net is the home's subnet.
	Net netip.Prefix
}

// Lab is a built topology. Its fields are fixed by the prefix: a process inside the lab
// (see Main) rebuilds the same value with Attach.
type Lab struct {
	Prefix string
	// Switch holds the bridge; nothing else.
	Switch NS
	// Server is the public server's namespace (ServerAddr).
	Server NS
	// Public is a machine on the public side (PublicAddr); Main runs tests there.
	Public NS
	// A and B are behind symmetric NATs; C is behind a NAT that drops all UDP.
	A, B, C Home
	// Nodes are the machines of a cluster of `concord serve` nodes, on the public side at
	// NodeAddr(i), without NAT: they reach each other, Server and Public over the bridge.
	Nodes [Nodes]NS
}

func layout(prefix string) *Lab {
	home := func(role string, n byte) Home {
		return Home{
			NS:     NS(prefix + "-" + role),
			Router: NS(prefix + "-r" + role),
			Addr:   netip.AddrFrom4([4]byte{10, n, 0, 2}),
			WAN:    netip.AddrFrom4([4]byte{100, 64, 0, 10 + n}),
			Net:    netip.PrefixFrom(netip.AddrFrom4([4]byte{10, n, 0, 0}), 24),
		}
	}
	l := &Lab{
		Prefix: prefix,
		Switch: NS(prefix + "-sw"),
		Server: NS(prefix + "-srv"),
		Public: NS(prefix + "-pub"),
		A:      home("a", 1),
		B:      home("b", 2),
		C:      home("c", 3),
	}
	for i := range l.Nodes {
		l.Nodes[i] = NS(fmt.Sprintf("%s-n%d", prefix, i+1))
	}
	return l
}

// Attach returns the lab named prefix, built by another process (it checks that its namespaces
// exist).
func Attach(prefix string) (*Lab, error) {
	l := layout(prefix)
	for _, ns := range l.namespaces() {
		if _, err := os.Stat(ns.path()); err != nil {
			return nil, fmt.Errorf("netlab: lab %s: %w", prefix, err)
		}
	}
	return l, nil
}

func (l *Lab) namespaces() []NS {
	return append([]NS{l.Switch, l.Server, l.Public, l.A.Router, l.A.NS, l.B.Router, l.B.NS, l.C.Router, l.C.NS}, l.Nodes[:]...)
}

// TempDir is a directory for the lab's files (binaries, certificates, logs), made by New and
// removed with the lab by Close, also after the processes that wrote there were killed.
func (l *Lab) TempDir() string { return filepath.Join(os.TempDir(), l.Prefix) }

// Homes returns A, B and C.
func (l *Lab) Homes() []Home { return []Home{l.A, l.B, l.C} }

// Available says why no lab can be built here (nil if one can): it needs root, ip and nft.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: it needs root (to create network namespaces)", ErrUnavailable)
	}
	for _, tool := range []string{"ip", "nft", "sysctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s not found (apt-get install iproute2 nftables procps)", ErrUnavailable, tool)
		}
	}
	return nil
}

// New builds a lab named after this process and returns it; Close deletes it. On error, whatever
// was built is deleted. It first deletes the namespaces of crashed earlier runs.
func New(ctx context.Context) (*Lab, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	CleanStale()
	l := layout(NamePrefix + strconv.Itoa(os.Getpid()))
	// Namespaces with this process's pid are from an earlier process that had the same pid.
	_ = l.Close()
	if err := l.build(ctx); err != nil {
		_ = l.Close()
		return nil, err
	}
	if err := os.MkdirAll(l.TempDir(), 0o700); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// routerRules is the ruleset of a NAT router: masquerade out of wan with a random port per
// mapping, forward only what the home started (and, with dropUDP, no UDP at all).
func routerRules(dropUDP bool) string {
	udp := ""
	if dropUDP {
		udp = "\t\tmeta l4proto udp counter drop\n"
	}
	return `table ip lab {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "wan" masquerade random,fully-random
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
` + udp + `		iifname "lan" oifname "wan" accept
		iifname "wan" oifname "lan" ct state established,related accept
	}
}
`
}

func (l *Lab) build(ctx context.Context) error {
	for _, ns := range l.namespaces() {
		if err := run(ctx, nil, "ip", "netns", "add", string(ns)); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		// IPv4 only: no IPv6 link-local addresses for a browser to gather.
		_ = run(ctx, nil, "ip", "netns", "exec", string(ns), "sysctl", "-q", "-w",
			"net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
		if err := ns.ip(ctx, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	sw := l.Switch
	if err := sw.ip(ctx, "link", "add", "br0", "type", "bridge"); err != nil {
		return err
	}
	if err := sw.ip(ctx, "link", "set", "br0", "up"); err != nil {
		return err
	}
	// plug connects ns to the bridge by a veth pair whose end in ns is ifname with addr.
	plug := func(port string, ns NS, ifname string, addr netip.Addr) error {
		steps := [][]string{
			{"link", "add", port, "type", "veth", "peer", "name", ifname, "netns", string(ns)},
			{"link", "set", port, "master", "br0"},
			{"link", "set", port, "up"},
		}
		for _, s := range steps {
			if err := sw.ip(ctx, s...); err != nil {
				return err
			}
		}
		if err := ns.ip(ctx, "addr", "add", netip.PrefixFrom(addr, PublicNet.Bits()).String(), "dev", ifname); err != nil {
			return err
		}
		return ns.ip(ctx, "link", "set", ifname, "up")
	}
	if err := plug("srv", l.Server, "eth0", ServerAddr); err != nil {
		return err
	}
	if err := plug("pub", l.Public, "eth0", PublicAddr); err != nil {
		return err
	}
	for i, n := range l.Nodes {
		if err := plug(fmt.Sprintf("n%d", i+1), n, "eth0", NodeAddr(i)); err != nil {
			return err
		}
	}
	for i, h := range l.Homes() {
		r := h.Router
		if err := plug("r"+string(rune('a'+i)), r, "wan", h.WAN); err != nil {
			return err
		}
		gw := h.Net.Addr().Next()
		steps := []struct {
			ns   NS
			args []string
		}{
			{r, []string{"link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", string(h.NS)}},
			{r, []string{"addr", "add", netip.PrefixFrom(gw, h.Net.Bits()).String(), "dev", "lan"}},
			{r, []string{"link", "set", "lan", "up"}},
			{h.NS, []string{"addr", "add", netip.PrefixFrom(h.Addr, h.Net.Bits()).String(), "dev", "eth0"}},
			{h.NS, []string{"link", "set", "eth0", "up"}},
			{h.NS, []string{"route", "add", "default", "via", gw.String()}},
		}
		for _, s := range steps {
			if err := s.ns.ip(ctx, s.args...); err != nil {
				return err
			}
		}
		if err := run(ctx, nil, "ip", "netns", "exec", string(r), "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"); err != nil {
			return err
		}
		if err := run(ctx, strings.NewReader(routerRules(h == l.C)), "ip", "netns", "exec", string(r), "nft", "-f", "-"); err != nil {
			return err
		}
	}
	return nil
}

// Close kills what still runs in the lab's namespaces (a test that was killed leaves its
// grandchildren, such as Chromium, behind), deletes the namespaces (their interfaces go with
// them) and removes TempDir.
func (l *Lab) Close() error {
	killed := killInside(l.namespaces())
	return errors.Join(killed, deleteNamespaces(l.namespaces()), os.RemoveAll(l.TempDir()))
}

// killInside sends SIGKILL to every process in the namespaces (`ip netns pids`: processes this
// lab started, and their children) and waits up to 5 s for them to be gone.
func killInside(nss []NS) error {
	var pids []int
	for _, ns := range nss {
		if _, err := os.Stat(ns.path()); err != nil {
			continue
		}
		out, err := exec.Command("ip", "netns", "pids", string(ns)).Output()
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				pids = append(pids, pid)
			}
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for !deadPid(strconv.Itoa(pid)) {
			if time.Now().After(deadline) {
				return fmt.Errorf("netlab: process %d outlived SIGKILL", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

func deleteNamespaces(nss []NS) error {
	var errs []error
	for _, ns := range nss {
		if _, err := os.Stat(ns.path()); errors.Is(err, os.ErrNotExist) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, run(ctx, nil, "ip", "netns", "delete", string(ns)))
		cancel()
	}
	return errors.Join(errs...)
}

// CleanStale deletes the namespaces and TempDirs of labs whose creating process is gone (a
// crashed or killed earlier run). Labs of live processes, this one's included, are left alone.
func CleanStale() {
	var stale []NS
	if entries, err := os.ReadDir(netnsDir); err == nil {
		for _, e := range entries {
			if pid, _, ok := strings.Cut(strings.TrimPrefix(e.Name(), NamePrefix), "-"); ok && strings.HasPrefix(e.Name(), NamePrefix) && deadPid(pid) {
				stale = append(stale, NS(e.Name()))
			}
		}
	}
	_ = deleteNamespaces(stale)
	if entries, err := os.ReadDir(os.TempDir()); err == nil {
		for _, e := range entries {
			if pid, ok := strings.CutPrefix(e.Name(), NamePrefix); ok && e.IsDir() && deadPid(pid) {
				_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
			}
		}
	}
}

// deadPid reports whether s is a process id and no such process runs.
func deadPid(s string) bool {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return false
	}
	_, err = os.Stat("/proc/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

// run runs a command, with stdin if given, and returns its stderr in the error.
func run(ctx context.Context, stdin *strings.Reader, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("netlab: %s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}
