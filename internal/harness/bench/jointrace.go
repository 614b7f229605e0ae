package bench

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// The phases of a member's join to its host, in the order they happen (LateJoin's breakdown).
const (
	phaseLink      = iota // the member made its link to the host (peer.Transport.Connect)
	phaseOffer            // its offer went to signaling
	phaseAnswer           // the host's answer arrived
	phaseICE              // ICE connected
	phaseDTLS             // DTLS handshake done
	phaseOpen             // both data channels open (SCTP associated)
	phaseFirstByte        // the first reliable message from the host (the snapshot's first fragment)
	phaseLastByte         // the last reliable message before the member synced (the snapshot's last)
	numPhases
)

var phaseNames = [numPhases]string{"link made", "offer sent", "answer in", "ICE", "DTLS", "channels open", "first byte", "last byte"}

// joinTrace stamps the phases of one member's join (unix nanos, 0: not yet). Its transport wraps
// the member's; the stamps come from link goroutines, hence atomics.
type joinTrace struct {
	at     [numPhases]atomic.Int64
	opened atomic.Int32
	synced func() bool // the member synced: later reliable messages are not the snapshot's
}

// stamp records phase i the first time it happens (last: every time).
func (t *joinTrace) stamp(i int, last bool) {
	now := time.Now().UnixNano()
	if last {
		t.at[i].Store(now)
		return
	}
	t.at[i].CompareAndSwap(0, now)
}

// reset clears the stamps (Migration, at a kill: the next link is the one to the new host).
func (t *joinTrace) reset() {
	for i := range t.at {
		t.at[i].Store(0)
	}
	t.opened.Store(0)
}

// wrap makes inner's links stamp t.
func (t *joinTrace) wrap(inner peer.Transport) peer.Transport { return tracingTransport{inner, t} }

type tracingTransport struct {
	inner peer.Transport
	t     *joinTrace
}

func (tt tracingTransport) Connect(cfg peer.LinkConfig) (peer.Link, error) {
	t := tt.t
	t.stamp(phaseLink, false)
	sig, h := cfg.Signal, cfg.Handler
	cfg.Signal = func(p sigclient.SignalPayload) error {
		if p.Kind == sigclient.SignalOffer {
			t.stamp(phaseOffer, false)
		}
		return sig(p)
	}
	cfg.Handler = func(ch link.Channel, b []byte) {
		if ch == link.Reliable && !t.synced() {
			t.stamp(phaseFirstByte, false)
			t.stamp(phaseLastByte, true)
		}
		h(ch, b)
	}
	cfg.Trace = func(ev string) {
		switch ev {
		case link.TraceICE:
			t.stamp(phaseICE, false)
		case link.TraceDTLS:
			t.stamp(phaseDTLS, false)
		case link.TraceChannelOpen:
			if t.opened.Add(1) == link.NumChannels {
				t.stamp(phaseOpen, false)
			}
		}
	}
	l, err := tt.inner.Connect(cfg)
	if err != nil {
		return nil, err
	}
	return tracingLink{l, t}, nil
}

// Flush passes the peer loop's flush on (peer's flusher), so wrapping keeps the batching.
func (tt tracingTransport) Flush() {
	if f, ok := tt.inner.(interface{ Flush() }); ok {
		f.Flush()
	}
}

type tracingLink struct {
	peer.Link
	t *joinTrace
}

func (l tracingLink) HandleSignal(p sigclient.SignalPayload) error {
	if p.Kind == sigclient.SignalAnswer {
		l.t.stamp(phaseAnswer, false)
	}
	return l.Link.HandleSignal(p)
}

// joinPhases are the steps of one join, each the time since the previous one; the first is since
// the member learnt its host (joined), the last (apply) ends at synced.
type joinPhases [numPhases + 1]time.Duration

// phases returns the steps of t from joined (unix nanos) to synced; ok false when a phase is
// missing or out of order.
func (t *joinTrace) phases(joined, synced int64) (p joinPhases, ok bool) {
	prev := joined
	for i := range numPhases {
		at := t.at[i].Load()
		if at == 0 {
			return p, false
		}
		// A phase may come before joined (the link made before the member heard of its host):
		// it then counts as 0 and the next one runs from it.
		p[i] = time.Duration(max(at-prev, 0))
		prev = max(prev, at)
	}
	p[numPhases] = time.Duration(max(synced-prev, 0))
	return p, true
}

// phaseMedians formats the median of each step over ps.
func phaseMedians(ps []joinPhases) string {
	if len(ps) == 0 {
		return "no phases traced"
	}
	var b strings.Builder
	for i := range numPhases + 1 {
		ds := make([]time.Duration, len(ps))
		for j, p := range ps {
			ds[j] = p[i]
		}
		name := "apply"
		if i < numPhases {
			name = phaseNames[i]
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s +%.1f", name, float64(quantile(ds, 0.5))/1e6)
	}
	b.WriteString(" ms (medians of each step since the previous one)")
	return b.String()
}
