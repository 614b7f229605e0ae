package hostsnapshot

import (
	"errors"
	"testing"

	"github.com/concordrtc/concord/crdt"
)

// Inspect reads a snapshot's claimed clock, its highest stamp, values and bytes, and refuses a
// malformed host state as Apply does.
func TestInspect(t *testing.T) {
	host := tinyHost(t)
	s := decode(t, encode(t, host, testTable, Options{Term: 1}))
	st, err := Inspect(s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Clock != 20 || st.MaxStamp != 10 {
		t.Fatalf("clock %d, max stamp %d; want 20, 10", st.Clock, st.MaxStamp)
	}
	var n int
	host.Range(func(crdt.Entry) bool { n++; return true })
	if st.Values < n || st.Bytes < len(s.HostState) {
		t.Fatalf("%d values (the host holds %d entries), %d bytes", st.Values, n, st.Bytes)
	}
	s.HostState = s.HostState[:len(s.HostState)-1]
	if _, err := Inspect(s); !errors.Is(err, ErrHostState) {
		t.Fatalf("truncated host state: %v, want ErrHostState", err)
	}
}
