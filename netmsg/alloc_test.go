package netmsg

import (
	"bytes"
	"testing"
)

// benchSnapshot returns a HostSnapshot with the given number of spawns.
func benchSnapshot(spawns int) HostSnapshot {
	m := HostSnapshot{HostTime: 1 << 40, LocalPeerIndex: 7, HostPeerIndex: 1, HostState: pattern(4096, 3)}
	for i := range 16 {
		m.Peers = append(m.Peers, PeerInfo{uint64(i), idZoe})
	}
	for i := range spawns {
		m.Spawns = append(m.Spawns, Spawn{entity(uint16(512+i), 1), uint32(i % 7), pattern(8, byte(i)), pattern(24, byte(i+1))})
	}
	return m
}

func TestZeroAllocs(t *testing.T) {
	full := fullDatagram()
	datagram := AppendEntityUpdates(nil, &full)
	snap := benchSnapshot(100)
	snapBytes := AppendHostSnapshot(nil, &snap)
	payload := AppendHello(nil, &Hello{1, 2, 3})
	payload = AppendPing(payload, &Ping{4, 5})
	payload = append(payload, datagram...)
	payload = AppendExt(payload, 99, []byte{1})
	buf := make([]byte, 0, 64<<10)

	var eu EntityUpdates
	var hs HostSnapshot
	var ping Ping
	var hello Hello
	var w EntityUpdatesWriter
	var r Reader
	var reasm Reassembler
	var frag Fragment
	fragPayload := pattern(3*MaxReliableMessage, 1)

	delta := DeltaUpdates{Seq: 1000, EntityUpdates: fullDatagram()}
	deltaBytes := AppendDeltaUpdates(nil, &delta)
	var du DeltaUpdates
	var dw DeltaUpdatesWriter
	var ack Ack
	ackBytes := AppendAck(nil, &Ack{Highest: 1 << 40, Received: 5})

	tests := []struct {
		name string
		f    func()
	}{
		{"DeltaUpdatesWriter fill datagram", func() {
			dw.Reset(buf[:0], delta.Seq, delta.Time, MaxDatagram)
			for i := range delta.Updates {
				if !dw.Add(&delta.Updates[i]) {
					break
				}
			}
			if dw.Count() == 0 {
				panic("datagram empty")
			}
		}},
		{"ConsumeDeltaUpdates", func() {
			if _, err := ConsumeDeltaUpdates(deltaBytes, &du); err != nil {
				panic(err)
			}
		}},
		{"AppendAck", func() { buf = AppendAck(buf[:0], &Ack{Highest: 77, Received: 3}) }},
		{"ConsumeAck", func() {
			if _, err := ConsumeAck(ackBytes, &ack); err != nil {
				panic(err)
			}
		}},
		{"EntityUpdatesWriter fill datagram", func() {
			w.Reset(buf[:0], full.Time, MaxDatagram)
			for i := range full.Updates {
				if !w.Add(&full.Updates[i]) {
					break
				}
			}
			if w.Len() != MaxDatagram {
				panic("datagram not full")
			}
		}},
		{"AppendEntityUpdates", func() { buf = AppendEntityUpdates(buf[:0], &full) }},
		{"ConsumeEntityUpdates", func() {
			if _, err := ConsumeEntityUpdates(datagram, &eu); err != nil {
				panic(err)
			}
		}},
		{"AppendUpdate", func() { buf = AppendUpdate(buf[:0], &full.Updates[0]) }},
		{"AppendPing", func() { buf = AppendPing(buf[:0], &Ping{1, 2}) }},
		{"ConsumePing", func() {
			if _, err := ConsumePing(payload[29:], &ping); err != nil {
				panic(err)
			}
		}},
		{"AppendHello", func() { buf = AppendHello(buf[:0], &Hello{1, 2, 3}) }},
		{"ConsumeHello", func() {
			if _, err := ConsumeHello(payload, &hello); err != nil {
				panic(err)
			}
		}},
		{"AppendPong", func() { buf = AppendPong(buf[:0], &Pong{1, 2}) }},
		{"Reader walk", func() {
			r.Reset(payload)
			for r.More() {
				if _, err := r.Next(); err != nil && err != ErrUnknownType {
					panic(err)
				}
			}
		}},
		{"CheckDatagram", func() {
			if CheckDatagram(datagram) != nil {
				panic("too large")
			}
		}},
		{"ConsumeHostSnapshot reused", func() {
			if _, err := ConsumeHostSnapshot(snapBytes, &hs); err != nil {
				panic(err)
			}
		}},
		{"Fragmenter and Reassembler", func() {
			f := NewFragmenter(fragPayload, 1, 0)
			for {
				var ok bool
				if buf, ok = f.Next(buf[:0]); !ok {
					break
				}
				if _, err := ConsumeFragment(buf, &frag); err != nil {
					panic(err)
				}
				if _, _, err := reasm.Push(&frag); err != nil {
					panic(err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f() // warm up: grow reused values once
			if n := testing.AllocsPerRun(100, tt.f); n != 0 {
				t.Errorf("%v allocations per run, want 0", n)
			}
		})
	}
	if !bytes.Equal(AppendHostSnapshot(nil, &hs), snapBytes) {
		t.Error("reused HostSnapshot decode is wrong")
	}
}
