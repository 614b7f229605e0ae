package cluster

import "time"

// Clock is placement's and the directory's source of time: what time it is, and timers, as in
// package peer (peer.Clock). PlacementConfig.Clock and Config.Clock inject one; tests use a
// manual clock to let leases expire and passes run without sleeps.
type Clock interface {
	Now() time.Time
	// NewTimer returns a running timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a Clock's one-shot timer, as time.Timer (Go 1.23 semantics: Reset and Stop need no
// draining).
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration) bool
	Stop() bool
}

// RealClock is the zero Config's clock: time.Now and time.Timer.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
func (t realTimer) Stop() bool                 { return t.t.Stop() }
