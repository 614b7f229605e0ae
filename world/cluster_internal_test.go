package world

import (
	"testing"
	"time"
)

func TestWorldHandoverCodec(t *testing.T) {
	now := time.Unix(1000, 0)
	dest := Region{X: 3, Y: 7}
	h := handoff{owner: "u/d", values: [][]byte{{1, 2}, nil, []byte("x")}, gen: 9, ack: 41, away: now.Add(-1500 * time.Millisecond)}
	b := appendHandover(nil, dest, h, now)
	x, y, g, err := consumeHandover(b, now)
	if err != nil || x != 3 || y != 7 || g.owner != h.owner || g.gen != 9 || g.ack != 41 || !g.away.Equal(h.away) || len(g.values) != 3 || g.values[1] != nil || string(g.values[2]) != "x" {
		t.Fatalf("%d %d %+v %v", x, y, g, err)
	}
	h.away = time.Time{}
	if _, _, g, _ := consumeHandover(appendHandover(nil, dest, h, now), now); !g.away.IsZero() {
		t.Fatalf("a member's handoff arrived away: %v", g.away)
	}
	for _, bad := range [][]byte{nil, b[:17], b[:len(b)-1], append(append([]byte{}, b...), 0)} {
		if _, _, _, err := consumeHandover(bad, now); err == nil {
			t.Fatalf("%x accepted", bad)
		}
	}
	// The record's gen must be the handoff's.
	c := append([]byte{}, b...)
	c[4]++
	if _, _, _, err := consumeHandover(c, now); err == nil {
		t.Fatal("a handoff whose record disagrees on gen accepted")
	}
}
