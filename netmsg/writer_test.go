package netmsg

import (
	"bytes"
	"testing"
)

func TestEntityUpdatesWriterFillsToLimit(t *testing.T) {
	u := Update{NetworkID: 1, Width: Width8, Mask: 1, Data: make([]byte, 16)} // 27 bytes
	tests := []struct {
		name  string
		limit int
		want  int // updates that fit
	}{
		{"default limit", 0, (MaxDatagram - entityUpdatesHeaderSize) / 27},
		{"header only", entityUpdatesHeaderSize, 0},
		{"exactly one", entityUpdatesHeaderSize + 27, 1},
		{"one byte short of two", entityUpdatesHeaderSize + 2*27 - 1, 1},
		{"reliable limit", MaxReliableMessage, (MaxReliableMessage - entityUpdatesHeaderSize) / 27},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w EntityUpdatesWriter
			if !w.Reset(nil, 77, tt.limit) {
				t.Fatal("Reset failed")
			}
			n := 0
			for n < 10000 && w.Add(&u) {
				n++
			}
			limit := tt.limit
			if limit == 0 {
				limit = MaxDatagram
			}
			if n != tt.want || w.Count() != n || w.Len() > limit {
				t.Fatalf("added %d (Count %d, Len %d), want %d within %d", n, w.Count(), w.Len(), tt.want, limit)
			}
			if w.Fits(&u) {
				t.Error("Fits after Add failed")
			}
			var m EntityUpdates
			nb, err := ConsumeEntityUpdates(w.Bytes(), &m)
			if err != nil || nb != w.Len() || len(m.Updates) != n || m.Time != 77 {
				t.Fatalf("decode: n=%d err=%v updates=%d", nb, err, len(m.Updates))
			}
		})
	}
}

func TestEntityUpdatesWriterSharesDatagram(t *testing.T) {
	var w EntityUpdatesWriter
	buf := make([]byte, 0, MaxDatagram)
	small := Update{NetworkID: 3, Width: Width16, Mask: 0x101, Data: []byte{1, 2}}
	w.Reset(buf, 10, 0)
	w.Add(&small)
	w.Add(&small)
	first := w.Len()
	if !w.Reset(w.Bytes(), 11, 0) {
		t.Fatal("second Reset failed")
	}
	w.Add(&small)
	want := AppendEntityUpdates(nil, &EntityUpdates{Time: 10, Updates: []Update{small, small}})
	want = AppendEntityUpdates(want, &EntityUpdates{Time: 11, Updates: []Update{small}})
	if !bytes.Equal(w.Bytes(), want) {
		t.Fatalf("got  %x\nwant %x", w.Bytes(), want)
	}
	if first != entityUpdatesHeaderSize+2*14 || &w.Bytes()[0] != &buf[:1][0] {
		t.Error("writer did not build in the given buffer")
	}
}

func TestEntityUpdatesWriterRefuses(t *testing.T) {
	var w EntityUpdatesWriter
	u := Update{Width: Width8}
	if w.Add(&u) || w.Fits(&u) {
		t.Fatal("zero writer accepted an update")
	}
	full := make([]byte, MaxDatagram-entityUpdatesHeaderSize+1)
	if w.Reset(full, 1, 0) {
		t.Fatal("Reset succeeded without room for the header")
	}
	if w.Add(&u) || !bytes.Equal(w.Bytes(), full) {
		t.Fatal("Add after failed Reset changed the buffer")
	}
	w.Reset(nil, 1, entityUpdatesHeaderSize+SizeUpdate(&u))
	before := bytes.Clone(w.Bytes())
	big := Update{Width: Width8, Data: []byte{1}}
	if w.Add(&big) || !bytes.Equal(w.Bytes(), before) {
		t.Fatal("Add of an update that does not fit changed the buffer")
	}
}
