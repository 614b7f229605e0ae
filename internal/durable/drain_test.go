package durable

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecodeStopNotice: any bytes on concord.store.stop decode to a notice naming a node of at
// most 256 bytes, which encodes and reads back as itself, or are refused with ErrBadStopNotice.
func FuzzDecodeStopNotice(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeStopNotice(b)
		if err != nil {
			if !errors.Is(err, ErrBadStopNotice) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n.Node == "" || len(n.Node) > 256 {
			t.Fatalf("node name of %d bytes accepted", len(n.Node))
		}
		again, _ := json.Marshal(n)
		var back stopNotice
		if err := json.Unmarshal(again, &back); err != nil || back != n {
			t.Fatalf("%+v decoded again as %+v, %v", n, back, err)
		}
	})
}
