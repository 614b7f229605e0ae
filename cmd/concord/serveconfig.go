package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// serveGroup is a heading of `concord serve -h` and of --print-config, and its flags.
type serveGroup struct {
	title string
	flags []string
}

// serveGroups orders serve's flags by concern. Every flag is in exactly one group
// (TestServeFlagGroups), so that a new flag cannot be left out of -h or of the config file.
var serveGroups = []serveGroup{
	{"Network (HTTP listener, the dedicated hosts' WebRTC, web origins)", []string{
		"addr", "origin", "ice", "udp", "public-ip", "relay-only",
		"http-read-header-timeout", "http-read-timeout", "http-idle-timeout"}},
	{"TLS and TURN", []string{
		"tls-cert", "tls-key", "hsts-max-age",
		"turn", "turn-tls", "turn-host", "turn-ports", "turn-allow-private", "turn-user-quota", "turn-max-bps",
		"turn-max-allocs-per-addr", "turn-max-allocs-per-token", "turn-max-conns-per-addr", "turn-tcp-idle-timeout",
		"turn-credential-ttl", "ice-server", "ice-server-secret"}},
	{"Limits: signaling (docs/protocol.md §4)", []string{
		"max-members", "max-rooms", "max-conns", "max-conns-per-addr", "max-devices-per-token", "sync-timeout",
		"signal-rate", "signal-burst", "recv-signal-rate", "recv-signal-burst", "error-rate", "error-burst",
		"ping-interval", "pong-wait", "send-queue"}},
	{"Limits: the dedicated hosts' sessions (docs/protocol.md §5)", []string{
		"relay-rate", "relay-burst", "recv-relay-rate", "recv-relay-burst", "relay-backlog",
		"max-append-sets", "max-member-world-bytes", "max-world-bytes"}},
	{"Storage (durable rooms, docs/protocol.md §6)", []string{
		"data", "checkpoint-interval", "room-ttl", "scene", "keep-rooms"}},
	{"Cluster (docs/protocol.md §7)", []string{
		"node-name", "cluster-name", "cluster", "routes", "replicas", "lease-ttl",
		"cluster-secret", "cluster-insecure", "cluster-tls-cert", "cluster-tls-key", "cluster-tls-ca",
		"nats", "nats-creds", "nats-token", "nats-ca", "nats-cert", "nats-key"}},
	{"Moderation and the operator (admin routes, logs, this configuration)", []string{
		"max-bans-per-room", "metrics", "pprof", "log-level", "config", "print-config"}},
	{"Demo and pages (the arena's dedicated host, a game's own page)", []string{
		"room", "dedicated-host", "interest-radius", "deltas", "static", "static-csp"}},
	{"Worlds (regions, docs/protocol.md §11)", []string{"world", "world-grace"}},
	{"Voice (the proximity voice forwarder, docs/protocol.md §10)", []string{
		"voice", "voice-radius", "voice-max-subscriptions", "voice-max-bitrate", "voice-max-sessions", "voice-max-relayed"}},
}

// cliOnly are the serve flags that are no key of the config file.
var cliOnly = map[string]bool{"config": true, "print-config": true}

// secretFlags are printed by --print-config only as whether they are set.
var secretFlags = map[string]bool{"cluster-secret": true, "nats-token": true, "ice-server-secret": true}

// printGroupedFlags writes fs's flags under the headings of groups, each as flag.PrintDefaults
// would; flags of no group (none, by TestServeFlagGroups) come last under "Other".
func printGroupedFlags(w io.Writer, fs *flag.FlagSet, groups []serveGroup) {
	seen := map[string]bool{}
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.flags {
			if f := fs.Lookup(name); f != nil {
				printFlag(w, f)
				seen[name] = true
			}
		}
	}
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] {
			if first {
				fmt.Fprintf(w, "\nOther:\n")
				first = false
			}
			printFlag(w, f)
		}
	})
}

// printFlag writes one flag as flag.PrintDefaults does.
func printFlag(w io.Writer, f *flag.Flag) {
	var b strings.Builder
	fmt.Fprintf(&b, "  -%s", f.Name)
	name, usage := flag.UnquoteUsage(f)
	if name != "" {
		b.WriteString(" " + name)
	}
	if b.Len() <= 4 { // a one-letter boolean flag fits on the line
		b.WriteString("\t")
	} else {
		b.WriteString("\n    \t")
	}
	b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
	default:
		if g, ok := f.Value.(flag.Getter); ok && isString(g.Get()) {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		} else {
			fmt.Fprintf(&b, " (default %v)", f.DefValue)
		}
	}
	fmt.Fprintln(w, b.String())
}

// loadServeConfig sets the flags of fs that the command line did not set from the TOML file
// path, whose keys are the flags' names (docs/serve.toml). A key that is no flag, or a value of
// the wrong type, is a usageError naming the key and its line. Repeatable flags take arrays.
func loadServeConfig(fs *flag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	// A struct with a field for each flag, of the flag's TOML type, tagged with its name: the
	// decoder checks the types and refuses unknown keys, with their positions.
	var fields []reflect.StructField
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if cliOnly[f.Name] {
			return
		}
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", len(fields)), Type: configType(f),
			Tag: reflect.StructTag(`toml:"` + f.Name + `"`)})
		names = append(names, f.Name)
	})
	v := reflect.New(reflect.StructOf(fields))
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		var missing *toml.StrictMissingError
		var de *toml.DecodeError
		switch {
		case errors.As(err, &missing) && len(missing.Errors) > 0:
			row, _ := missing.Errors[0].Position()
			return usageError{fmt.Errorf("--config %s:%d: unknown key %q (the keys are serve's flags, see docs/serve.toml)",
				path, row, strings.Join(missing.Errors[0].Key(), "."))}
		case errors.As(err, &de):
			row, _ := de.Position()
			key := strings.Join(de.Key(), ".")
			if f := fs.Lookup(key); f != nil && !cliOnly[key] {
				// The decoder's message spells out the whole generated struct.
				return usageError{fmt.Errorf("--config %s:%d: key %q: want %s", path, row, key, typeName(f))}
			}
			msg := de.Error()
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			return usageError{fmt.Errorf("--config %s:%d: %s", path, row, msg)}
		}
		return usageError{fmt.Errorf("--config %s: %w", path, err)}
	}
	for i, name := range names {
		fv := v.Elem().Field(i)
		if fv.IsNil() || given[name] {
			continue // not in the file, or the command line's wins
		}
		var vals []string
		x := fv.Elem().Interface()
		if fv.Type() == reflect.TypeFor[*any]() {
			switch x.(type) {
			case int64, float64:
			default:
				return usageError{fmt.Errorf("--config %s: key %q: want %s", path, name, typeName(fs.Lookup(name)))}
			}
		}
		switch x := x.(type) {
		case []string:
			vals = x
		case bool:
			vals = []string{strconv.FormatBool(x)}
		case int64:
			vals = []string{strconv.FormatInt(x, 10)}
		case string:
			vals = []string{x}
		case float64:
			vals = []string{strconv.FormatFloat(x, 'g', -1, 64)}
		default:
			vals = []string{fmt.Sprint(x)}
		}
		for _, val := range vals {
			if err := fs.Set(name, val); err != nil {
				return usageError{fmt.Errorf("--config %s: %s: %w", path, name, err)}
			}
		}
	}
	return nil
}

func isString(v any) bool { _, ok := v.(string); return ok }

// typeName says what a flag's key takes.
func typeName(f *flag.Flag) string {
	g, _ := f.Value.(flag.Getter)
	if g != nil {
		if _, ok := g.Get().(time.Duration); ok {
			return `a duration string ("10s", "1m30s")`
		}
	}
	switch configType(f) {
	case reflect.TypeFor[*bool]():
		return "true or false"
	case reflect.TypeFor[*int64]():
		return "an integer"
	case reflect.TypeFor[*any]():
		return "a number"
	case reflect.TypeFor[*[]string]():
		return "an array of strings"
	}
	return "a string"
}

// configType is the Go type a flag's key decodes into: a pointer, nil when the key is absent.
func configType(f *flag.Flag) reflect.Type {
	g, _ := f.Value.(flag.Getter)
	var v any
	if g != nil {
		v = g.Get()
	}
	switch v.(type) {
	case bool:
		return reflect.TypeFor[*bool]()
	case int, int64, uint, uint64:
		return reflect.TypeFor[*int64]()
	case float64:
		return reflect.TypeFor[*any]() // 80 and 80.0 alike
	case []string:
		return reflect.TypeFor[*[]string]()
	default: // strings, durations ("10s")
		return reflect.TypeFor[*string]()
	}
}

// printServeConfig writes fs's values as a config file for --config: every key, grouped and
// headed as -h, with the secrets left out.
func printServeConfig(w io.Writer, fs *flag.FlagSet) error {
	var b bytes.Buffer
	b.WriteString("# concord serve --config FILE: keys are serve's flags (concord serve -h); flags given on\n# the command line override the file.\n")
	for _, g := range serveGroups {
		fmt.Fprintf(&b, "\n# %s\n", g.title)
		for _, name := range g.flags {
			f := fs.Lookup(name)
			if f == nil || cliOnly[name] {
				continue
			}
			g, ok := f.Value.(flag.Getter)
			if !ok {
				continue
			}
			v := g.Get()
			if d, ok := v.(time.Duration); ok {
				v = d.String()
			}
			if secretFlags[name] {
				if v != "" {
					fmt.Fprintf(&b, "# %s is set (not printed)\n", name)
				}
				continue
			}
			line, err := toml.Marshal(map[string]any{name: v})
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			b.Write(line)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
