package pionlog

import (
	"fmt"
	"strings"

	"github.com/pion/logging"
	"github.com/rs/zerolog"
)

// ScopeField is the zerolog field that carries the pion scope of a message
// (for example "ice", "sctp" or "pc").
const ScopeField = "pion"

// DefaultLevel is the least severe level of pion's messages that Level lets through: pion logs
// every connection's progress at info and debug, which would drown a server's own logs.
const DefaultLevel = zerolog.WarnLevel

// Level returns l for pion (a Factory's Logger, link.Config.Logger): the same writer and fields
// (the caller's component, peer, …), at DefaultLevel and above, or at l's own level when that is
// more severe. pion's scope goes into ScopeField, so l's "component" field stays the caller's.
func Level(l zerolog.Logger) zerolog.Logger {
	return l.Level(max(DefaultLevel, l.GetLevel()))
}

// Factory is a pion logging.LoggerFactory that writes to a zerolog.Logger.
//
// The zero value is valid and discards everything (a zero zerolog.Logger is
// disabled). Filter pion's verbosity with the logger's own level, for example
// Factory{Logger: l.Level(zerolog.WarnLevel)}.
type Factory struct {
	// Logger receives pion's messages. Default: disabled.
	Logger zerolog.Logger
}

var _ logging.LoggerFactory = (*Factory)(nil)

// New returns a Factory writing to l.
func New(l zerolog.Logger) *Factory {
	return &Factory{Logger: l}
}

// NewLogger returns a leveled logger for one pion scope. pion calls it once per
// component instance, not per message.
func (f *Factory) NewLogger(scope string) logging.LeveledLogger {
	return &leveled{l: f.Logger.With().Str(ScopeField, scope).Logger(), scope: scope}
}

// leveled maps pion's LeveledLogger methods onto zerolog events. A disabled
// level yields a nil *zerolog.Event, whose Msg/Msgf return without formatting,
// so filtered-out messages cost no Sprintf.
type leveled struct {
	l     zerolog.Logger
	scope string
}

var _ logging.LeveledLogger = (*leveled)(nil)

// TraceEnabled reports whether trace messages are written. The carried pion/sctp asks once per
// association and then skips its per-packet Tracef calls, whose arguments are allocated even when
// the message is dropped (third_party/pion-sctp/CONCORD-PATCH.md).
func (g *leveled) TraceEnabled() bool {
	e := g.l.Trace()
	if e == nil {
		return false
	}
	e.Discard()
	return true
}

func (g *leveled) Trace(msg string)                  { g.l.Trace().Msg(msg) }
func (g *leveled) Tracef(format string, args ...any) { g.l.Trace().Msgf(format, args...) }
func (g *leveled) Debug(msg string)                  { g.l.Debug().Msg(msg) }
func (g *leveled) Debugf(format string, args ...any) { g.l.Debug().Msgf(format, args...) }
func (g *leveled) Info(msg string)                   { g.l.Info().Msg(msg) }
func (g *leveled) Infof(format string, args ...any)  { g.l.Info().Msgf(format, args...) }
func (g *leveled) Warn(msg string)                   { g.warn(msg) }
func (g *leveled) Error(msg string)                  { g.error(msg) }
func (g *leveled) Errorf(format string, args ...any) { g.error(fmt.Sprintf(format, args...)) }

// Warnf formats only when a warning or its demoted debug line may be written.
func (g *leveled) Warnf(format string, args ...any) {
	if max(g.l.GetLevel(), zerolog.GlobalLevel()) > zerolog.WarnLevel {
		return // a logger that drops warnings drops debug lines too
	}
	g.warn(fmt.Sprintf(format, args...))
}

// error writes a pion error, at debug when Benign lists it as expected.
func (g *leveled) error(msg string) {
	if IsBenign(g.scope, msg) {
		g.l.Debug().Msg(msg)
		return
	}
	g.l.Error().Msg(msg)
}

// warn writes a pion warning, at debug when Benign lists it as expected.
func (g *leveled) warn(msg string) {
	if IsBenign(g.scope, msg) {
		g.l.Debug().Msg(msg)
		return
	}
	g.l.Warn().Msg(msg)
}

// A BenignWarning is a warning (or, for a few, an error line) pion logs in the normal course of a
// connection: nothing is wrong,
// so it goes to debug, where it still helps to follow a connection, instead of making every
// healthy run print warnings an operator learns to ignore (and then misses the real ones). A
// warning is benign when its scope is Scope, it starts with Prefix and it contains Contains.
type BenignWarning struct {
	Scope, Prefix, Contains string
	// Why it is expected.
	Why string
}

// Benign lists pion's expected warnings (pion/ice v4, pion/sctp as carried in third_party).
// Warnings that tell of a mistake stay warnings: "Failed to resolve TCP address" of a turns: URL
// whose host does not resolve where the member is, for one (serve --turn-host names it).
var Benign = []BenignWarning{
	{Scope: "ice", Prefix: "Failed to ping without candidate pairs",
		Why: "ICE checks start before the remote's trickled candidates arrive: every connection logs it until they do"},
	{Scope: "ice", Prefix: "Failed to read from candidate", Contains: "closed pipe",
		Why: "closing a connection closes its muxed candidate sockets under their read loops"},
	{Scope: "sctp", Contains: "failed to write packets on netConn: dtls fatal: conn is closed",
		Why: "a member that leaves closes DTLS while SCTP still flushes its last packets (a SACK, the shutdown)"},
	{Scope: "sctp", Contains: "failed to write packets on netConn: dtls fatal: io: read/write on closed pipe",
		Why: "the same, when the ICE connection under DTLS closed first"},
	{Scope: "pc", Prefix: "Failed to accept RTP stream is already closed",
		Why: "a media connection (voice, docs/protocol.md §10) closed: its undeclared-stream loop ends on the closed transport"},
	{Scope: "pc", Prefix: "Failed to accept RTCP stream is already closed", Why: "the same, for RTCP"},
	{Scope: "pc", Prefix: "Could not determine PayloadType for SSRC", Contains: "(EOF)",
		Why: "a media connection closed while a stream's first packet was awaited"},
	{Scope: "pc", Prefix: "Failed to start manager: connecting canceled by caller",
		Why: "a connection closed while ICE was still connecting (a member that leaves, or a link given up and redialled)"},
	{Scope: "pc", Prefix: "Failed to start SCTP: association closed before connecting",
		Why: "a connection closed while SCTP was still connecting (a host migration replaces the links being set up)"},
	{Scope: "pc", Prefix: "Failed to start SCTP: DTLS not established",
		Why: "follows every failed ICE or DTLS start, whose own \"Failed to start manager\" line says why (a warning unless it was a close)"},
	{Scope: "mux", Prefix: "Warning: mux: no endpoint for packet starting with ", Contains: ", adding to queue",
		Why: "a DTLS record that arrives before its endpoint is registered waits in the queue for it, and one that arrives after " +
			"a close (the remote's last data, its close_notify alert) is dropped with the mux; a full queue (\"not adding\") stays a warning"},
	{Scope: "udpmux", Prefix: "Failed to write packet: ", Contains: "closed pipe",
		Why: "an error line: a datagram that arrives while its connection closes is handed to the closed connection " +
			"(pion's mux worker outlives the mux's Close by that one packet)"},
	{Scope: "udpmux", Prefix: "UDPMuxDefault should not listening on unspecified address",
		Why: "serve binds its one WebRTC socket on every interface (--addr 0.0.0.0, --udp 0.0.0.0:PORT) on purpose: " +
			"pion then gathers a host candidate per interface on that one port, and the socket keeps Concord's batched I/O (peer/link), " +
			"which pion's per-interface MultiUDPMux would not"},
}

// IsBenign reports whether msg, a warning of the pion scope, is in Benign.
func IsBenign(scope, msg string) bool {
	for _, b := range Benign {
		if b.Scope == scope && strings.HasPrefix(msg, b.Prefix) && strings.Contains(msg, b.Contains) {
			return true
		}
	}
	return false
}
