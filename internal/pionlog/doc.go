// Package pionlog bridges pion's logging interfaces to zerolog.
//
// pion components (webrtc, ice, dtls, sctp, datachannel, …) log through a
// [logging.LoggerFactory] set on webrtc.SettingEngine.LoggerFactory. [Factory]
// implements it over an injected zerolog.Logger, so pion's logs end up in the
// same structured stream as Concord's, tagged with the pion scope
// ("pion"="ice", …) and at the matching level: Trace→Trace, Debug→Debug,
// Info→Info, Warn→Warn, Error→Error.
//
// The package owns no goroutines and no state beyond the logger it is given.
// Every method is safe for concurrent use, as pion requires, because
// zerolog.Logger is.
//
// [logging.LoggerFactory]: https://pkg.go.dev/github.com/pion/logging#LoggerFactory
package pionlog
