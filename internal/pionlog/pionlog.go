package pionlog

import (
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
	return &leveled{l: f.Logger.With().Str(ScopeField, scope).Logger()}
}

// leveled maps pion's LeveledLogger methods onto zerolog events. A disabled
// level yields a nil *zerolog.Event, whose Msg/Msgf return without formatting,
// so filtered-out messages cost no Sprintf.
type leveled struct {
	l zerolog.Logger
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
func (g *leveled) Warn(msg string)                   { g.l.Warn().Msg(msg) }
func (g *leveled) Warnf(format string, args ...any)  { g.l.Warn().Msgf(format, args...) }
func (g *leveled) Error(msg string)                  { g.l.Error().Msg(msg) }
func (g *leveled) Errorf(format string, args ...any) { g.l.Error().Msgf(format, args...) }
