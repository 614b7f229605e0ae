package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/concordrtc/concord/server"
)

// serveOptions parses serve's command line (and --config) into server.Options, as cmdServe does
// before it starts the server.
func serveOptions(t *testing.T, args ...string) (server.Options, error) {
	t.Helper()
	_, c, err := parseServe(args, io.Discard)
	if err != nil {
		return server.Options{}, err
	}
	return c.o, nil
}

// TestServeConfigExample: docs/serve.toml gives the same options as the flags it spells out.
func TestServeConfigExample(t *testing.T) {
	t.Setenv("CONCORD_CLUSTER_SECRET", "")
	file, err := serveOptions(t, "--config", "../../docs/serve.toml")
	if err != nil {
		t.Fatal(err)
	}
	flags, err := serveOptions(t, "--addr", "0.0.0.0:443", "--public-ip", "203.0.113.7", "--origin", "https://game.example.com",
		"--tls-cert", "/etc/concord/cert.pem", "--tls-key", "/etc/concord/key.pem", "--turn", ":3478", "--turn-tls", ":5349",
		"--turn-ports", "49152-49999", "--max-members", "32", "--max-conns-per-addr", "64", "--signal-rate", "40",
		"--relay-rate", "131072", "--data", "/var/lib/concord", "--checkpoint-interval", "5s", "--scene", "lobby=/etc/concord/lobby.crdt",
		"--metrics=true", "--log-level", "warn", "--room", "arena", "--dedicated-host=true")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(file, flags) {
		t.Fatalf("docs/serve.toml:\n%+v\nflags:\n%+v", file, flags)
	}
	if file.Limits.MaxMembers != 32 || file.Limits.SignalRate != 40 || file.Scenes["lobby"] != "/etc/concord/lobby.crdt" {
		t.Fatalf("options %+v", file)
	}
}

// TestServeConfigOverrides: a flag on the command line wins over the file's key, a repeatable one
// whole; the file's other keys hold.
func TestServeConfigOverrides(t *testing.T) {
	path := writeConfig(t, "addr = \"127.0.0.1:9000\"\nroutes = [\"nats-route://a:6222\"]\nmax-rooms = 7\nstatic = \"/srv/game\"\n")
	o, err := serveOptions(t, "--config", path, "--addr", "127.0.0.1:9001", "--routes", "nats-route://b:6222")
	if err != nil {
		t.Fatal(err)
	}
	if o.Addr != "127.0.0.1:9001" || !reflect.DeepEqual(o.Routes, []string{"nats-route://b:6222"}) || o.Limits.MaxRooms != 7 {
		t.Fatalf("addr %s routes %v max-rooms %d", o.Addr, o.Routes, o.Limits.MaxRooms)
	}
	if o.DedicatedHost {
		t.Fatal("static from the file: --dedicated-host should default to false")
	}
}

// TestServeConfigErrors: a key that is no flag, or a value of the wrong type, is a usage error
// naming the key and its line; a missing file names the file.
func TestServeConfigErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"addr = \"127.0.0.1:0\"\n\nmax-member = 3\n", `:3: unknown key "max-member"`},
		{"addr = \"127.0.0.1:0\"\nmax-members = \"many\"\n", `:2: key "max-members"`},
		{"[network]\naddr = \"x\"\n", `unknown key "network`},
		{"config = \"other.toml\"\n", `:1: unknown key "config"`},
		{"addr = \n", ":1:"},
		{"signal-rate = \"fast\"\n", `key "signal-rate": want a number`},
	} {
		path := writeConfig(t, tc.file)
		_, err := serveOptions(t, "--config", path)
		var ue usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error with %q", tc.file, err, tc.want)
		}
	}
	if _, err := serveOptions(t, "--config", filepath.Join(t.TempDir(), "none.toml")); err == nil || !strings.Contains(err.Error(), "none.toml") {
		t.Errorf("missing file: %v", err)
	}
}

// TestServePrintConfig: --print-config prints every key but the secrets, and reads back as the
// same options.
func TestServePrintConfig(t *testing.T) {
	t.Setenv("CONCORD_CLUSTER_SECRET", "route-secret")
	args := []string{"--addr", "127.0.0.1:0", "--scene", "a=/x.crdt", "--routes", "nats-route://a:1,nats-route://b:2", "--signal-rate", "12.5",
		"--turn-allow-private", "10.0.0.0/8", "--ice-server", "stun:127.0.0.1:3478", "--static", "/srv/game", "--cluster-name", "c"}
	var out bytes.Buffer
	if err := cmdServe(t.Context(), append(args, "--print-config"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "route-secret") || !strings.Contains(out.String(), "# cluster-secret is set") {
		t.Fatalf("--print-config shows the secret:\n%s", out.String())
	}
	want, err := serveOptions(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := serveOptions(t, "--config", writeConfig(t, out.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("printed config read back:\n%+v\nwant:\n%+v", got, want)
	}
}

// TestServeFlagGroups: every flag of serve is in exactly one group of -h and --print-config, and
// every name in the groups is a flag.
func TestServeFlagGroups(t *testing.T) {
	fs, _ := newServeFlags(io.Discard)
	in := map[string]int{}
	for _, g := range serveGroups {
		for _, name := range g.flags {
			in[name]++
			if fs.Lookup(name) == nil {
				t.Errorf("group %q: %s is no flag", g.title, name)
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if in[f.Name] != 1 {
			t.Errorf("--%s is in %d groups of serveGroups, want 1", f.Name, in[f.Name])
		}
	})
	var help bytes.Buffer
	printHelp(&help, "serve", fs)
	for _, g := range serveGroups {
		if !strings.Contains(help.String(), "\n"+g.title+":\n") {
			t.Errorf("serve -h has no heading %q", g.title)
		}
	}
	if strings.Contains(help.String(), "\nOther:\n") {
		t.Errorf("serve -h has flags of no group:\n%s", help.String())
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "serve.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
