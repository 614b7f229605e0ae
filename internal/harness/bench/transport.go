package bench

import (
	"sync/atomic"

	"github.com/concordrtc/concord/peer"
	"github.com/concordrtc/concord/peer/link"
)

// countingTransport counts the payload bytes and messages a peer's links send and receive, per
// channel, so that the driver can read exact traffic at any instant (peer.Status is refreshed only
// every report interval).
type countingTransport struct {
	inner    peer.Transport
	bytesIn  [link.NumChannels]atomic.Uint64
	bytesOut [link.NumChannels]atomic.Uint64
	msgsIn   [link.NumChannels]atomic.Uint64
	msgsOut  [link.NumChannels]atomic.Uint64
}

func (t *countingTransport) Connect(cfg peer.LinkConfig) (peer.Link, error) {
	h := cfg.Handler
	cfg.Handler = func(ch link.Channel, b []byte) {
		if ch < link.NumChannels {
			t.bytesIn[ch].Add(uint64(len(b)))
			t.msgsIn[ch].Add(1)
		}
		h(ch, b)
	}
	l, err := t.inner.Connect(cfg)
	if err != nil {
		return nil, err
	}
	return countingLink{Link: l, t: t}, nil
}

type countingLink struct {
	peer.Link
	t *countingTransport
}

func (l countingLink) Send(ch link.Channel, b []byte) error {
	err := l.Link.Send(ch, b)
	if err == nil && ch < link.NumChannels {
		l.t.bytesOut[ch].Add(uint64(len(b)))
		l.t.msgsOut[ch].Add(1)
	}
	return err
}

// SendOwned implements link.OwnedSender: the host's shared datagrams keep going by reference.
func (l countingLink) SendOwned(ch link.Channel, b []byte) error {
	err := link.SendOwned(l.Link, ch, b)
	if err == nil && ch < link.NumChannels {
		l.t.bytesOut[ch].Add(uint64(len(b)))
		l.t.msgsOut[ch].Add(1)
	}
	return err
}

// SendOwnedBatch implements link.OwnedBatchSender: the host's burst of shared datagrams keeps
// going to SCTP in one write.
func (l countingLink) SendOwnedBatch(ch link.Channel, bs [][]byte) error {
	err := link.SendOwnedBatch(l.Link, ch, bs)
	if err == nil && ch < link.NumChannels {
		for _, b := range bs {
			l.t.bytesOut[ch].Add(uint64(len(b)))
		}
		l.t.msgsOut[ch].Add(uint64(len(bs)))
	}
	return err
}

// total is every byte in and out, both channels.
func (t *countingTransport) total() uint64 {
	var n uint64
	for ch := range link.NumChannels {
		n += t.bytesIn[ch].Load() + t.bytesOut[ch].Load()
	}
	return n
}

// inOut is every byte in and every byte out, both channels.
func (t *countingTransport) inOut() (in, out uint64) {
	for ch := range link.NumChannels {
		in += t.bytesIn[ch].Load()
		out += t.bytesOut[ch].Load()
	}
	return in, out
}
