package pionlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pion/logging"
	"github.com/rs/zerolog"
)

func TestLevelsAndScope(t *testing.T) {
	tests := []struct {
		name  string
		log   func(l logging.LeveledLogger)
		level string
		msg   string
	}{
		{"trace", func(l logging.LeveledLogger) { l.Trace("t") }, "trace", "t"},
		{"tracef", func(l logging.LeveledLogger) { l.Tracef("t%d", 1) }, "trace", "t1"},
		{"debug", func(l logging.LeveledLogger) { l.Debug("d") }, "debug", "d"},
		{"debugf", func(l logging.LeveledLogger) { l.Debugf("d%s", "x") }, "debug", "dx"},
		{"info", func(l logging.LeveledLogger) { l.Info("i") }, "info", "i"},
		{"infof", func(l logging.LeveledLogger) { l.Infof("i%v", true) }, "info", "itrue"},
		{"warn", func(l logging.LeveledLogger) { l.Warn("w") }, "warn", "w"},
		{"warnf", func(l logging.LeveledLogger) { l.Warnf("w%d", 2) }, "warn", "w2"},
		{"error", func(l logging.LeveledLogger) { l.Error("e") }, "error", "e"},
		{"errorf", func(l logging.LeveledLogger) { l.Errorf("e%d", 3) }, "error", "e3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			f := New(zerolog.New(&buf).Level(zerolog.TraceLevel))
			tc.log(f.NewLogger("ice"))

			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("output %q is not one JSON object: %v", buf.String(), err)
			}
			if got["level"] != tc.level || got["message"] != tc.msg || got[ScopeField] != "ice" {
				t.Fatalf("got %v, want level=%s message=%s %s=ice", got, tc.level, tc.msg, ScopeField)
			}
		})
	}
}

func TestFiltered(t *testing.T) {
	var buf bytes.Buffer
	f := New(zerolog.New(&buf).Level(zerolog.WarnLevel))
	l := f.NewLogger("sctp")
	l.Debugf("hidden %d", 1)
	l.Info("hidden")
	if buf.Len() != 0 {
		t.Fatalf("levels below warn were written: %q", buf.String())
	}
	l.Warn("shown")
	if buf.Len() == 0 {
		t.Fatal("warn was filtered out")
	}
}

func TestZeroFactoryDiscards(t *testing.T) {
	var f Factory
	l := f.NewLogger("pc")
	l.Errorf("nothing %d", 1) // Must not panic; a zero zerolog.Logger is disabled.
	if allocs := testing.AllocsPerRun(100, func() { l.Debugf("x %d", 1) }); allocs > 1 {
		t.Fatalf("disabled logging allocates %v times per call", allocs)
	}
}

// Level keeps the caller's writer and fields (one "component", the caller's), lets pion's warnings
// through with a timestamp, drops its info, and keeps a more severe level the caller chose.
func TestLevel(t *testing.T) {
	var buf bytes.Buffer
	base := zerolog.New(&buf).With().Timestamp().Str("component", "host").Logger()
	l := New(Level(base)).NewLogger("ice")
	l.Info("chatter")
	l.Debugf("chatter %d", 1)
	if buf.Len() != 0 {
		t.Fatalf("pion's info went through: %q", buf.String())
	}
	l.Warnf("candidate %s failed", "x")
	line := buf.String()
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%q is not one JSON object: %v", line, err)
	}
	if got["level"] != "warn" || got["component"] != "host" || got[ScopeField] != "ice" || got["message"] != "candidate x failed" || got["time"] == nil {
		t.Fatalf("got %v", got)
	}
	if n := bytes.Count(buf.Bytes(), []byte(`"component"`)); n != 1 {
		t.Fatalf("%d component keys in %q", n, line)
	}
	buf.Reset()
	New(Level(base.Level(zerolog.ErrorLevel))).NewLogger("sctp").Warn("dropped")
	if buf.Len() != 0 {
		t.Fatalf("a warning went through an error-level logger: %q", buf.String())
	}
}

// TestTraceEnabled: a logger says it traces only at the trace level (the carried pion/sctp skips
// its per-packet traces otherwise), and asking writes nothing.
func TestTraceEnabled(t *testing.T) {
	var buf bytes.Buffer
	for _, tc := range []struct {
		l    zerolog.Logger
		want bool
	}{
		{zerolog.New(&buf).Level(zerolog.TraceLevel), true},
		{zerolog.New(&buf).Level(zerolog.DebugLevel), false},
		{Level(zerolog.New(&buf).Level(zerolog.TraceLevel)), false}, // pion's default level: warn
		{zerolog.Logger{}, false},
	} {
		l, ok := New(tc.l).NewLogger("sctp").(interface{ TraceEnabled() bool })
		if !ok {
			t.Fatal("the logger cannot say whether it traces")
		}
		if got := l.TraceEnabled(); got != tc.want {
			t.Errorf("level %v: TraceEnabled %v, want %v", tc.l.GetLevel(), got, tc.want)
		}
	}
	if buf.Len() != 0 {
		t.Fatalf("asking wrote %q", buf.String())
	}
}

// TestBenignWarnings: each of pion's expected warnings (Benign) is written at debug, through Warn
// and Warnf alike, and is dropped by a warn-level logger (pionlog.Level); the same message from
// another scope, or with another cause, is still a warning.
func TestBenignWarnings(t *testing.T) {
	tests := []struct {
		scope, msg string
		benign     bool
	}{
		{"ice", "Failed to ping without candidate pairs. Connection is not possible yet.", true},
		{"ice", "Failed to read from candidate udp4 host 127.0.0.1:60188 (resolved: 127.0.0.1:60188): io: read/write on closed pipe", true},
		{"sctp", "[0x2fecd2afe008] failed to write packets on netConn: dtls fatal: conn is closed", true},
		{"udpmux", "UDPMuxDefault should not listening on unspecified address, use NewMultiUDPMuxFromPort instead", true},
		{"pc", "Failed to start manager: connecting canceled by caller", true},
		{"pc", "Failed to start SCTP: DTLS not established", true},
		{"pc", "Failed to start SCTP: association closed before connecting", true},
		{"sctp", "[0x296bfa8bc708] failed to write packets on netConn: dtls fatal: io: read/write on closed pipe", true},
		{"pc", "Failed to start manager: handshake error: EOF", false},
		{"mux", "Warning: mux: no endpoint for packet starting with 23, adding to queue size(0)", true},
		{"mux", "Warning: mux: no endpoint for packet starting with 23, not adding to queue size(32)", false},
		{"pc", "Failed to start manager: handshake error: remote fingerprint does not match", false},

		{"sctp", "Failed to ping without candidate pairs. Connection is not possible yet.", false},
		{"ice", "Failed to read from candidate udp4 host 127.0.0.1:60188: read udp4: connection refused", false},
		{"sctp", "[0x2fecd2afe008] failed to write packets on netConn: write udp4: no buffer space available", false},
		{"ice", "Failed to resolve TCP address turn.example.com:5349: lookup turn.example.com: no such host", false},
	}
	for _, tc := range tests {
		want := "warn"
		if tc.benign {
			want = "debug"
		}
		for _, viaf := range []bool{false, true} {
			var buf bytes.Buffer
			l := New(zerolog.New(&buf).Level(zerolog.DebugLevel)).NewLogger(tc.scope)
			if viaf {
				l.Warnf("%s", tc.msg)
			} else {
				l.Warn(tc.msg)
			}
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("%s %q: output %q: %v", tc.scope, tc.msg, buf.String(), err)
			}
			if got["level"] != want || got["message"] != tc.msg {
				t.Errorf("%s %q (Warnf %v): level %v, want %s", tc.scope, tc.msg, viaf, got["level"], want)
			}

			buf.Reset()
			l = New(Level(zerolog.New(&buf))).NewLogger(tc.scope)
			l.Warnf("%s", tc.msg)
			if tc.benign && buf.Len() != 0 {
				t.Errorf("%s %q: a warn-level logger wrote the benign warning: %s", tc.scope, tc.msg, buf.String())
			}
			if !tc.benign && buf.Len() == 0 {
				t.Errorf("%s %q: a warn-level logger dropped a real warning", tc.scope, tc.msg)
			}
		}
	}
}

// TestBenignErrors: pion's expected error lines (Benign) go to debug through Error and Errorf,
// so a test logger at error level never sees a closing connection's last packet after the test;
// another error of the same scope is still an error.
func TestBenignErrors(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want string
	}{
		{"Failed to write packet: io: read/write on closed pipe", "debug"},
		{"Failed to write packet: write udp4 127.0.0.1:1->127.0.0.1:2: sendmsg: no buffer space available", "error"},
	} {
		for _, viaf := range []bool{false, true} {
			var buf bytes.Buffer
			l := New(zerolog.New(&buf).Level(zerolog.DebugLevel)).NewLogger("udpmux")
			if viaf {
				l.Errorf("Failed to write packet: %s", strings.TrimPrefix(tc.msg, "Failed to write packet: "))
			} else {
				l.Error(tc.msg)
			}
			if got := buf.String(); !strings.Contains(got, `"level":"`+tc.want+`"`) || !strings.Contains(got, tc.msg) {
				t.Errorf("%q (Errorf %v) logged %s, want level %s", tc.msg, viaf, got, tc.want)
			}
		}
	}
}
