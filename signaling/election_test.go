package signaling

import (
	"math/rand/v2"
	"testing"
)

// cand builds a candidate that may host and has synced.
func cand(idx PeerIndex, id Identity, power int) Candidate {
	return Candidate{Index: idx, ID: id, Power: power, JoinOrder: uint64(idx), MayHost: true, Synced: true}
}

func unsynced(c Candidate) Candidate { c.Synced = false; return c }
func noHost(c Candidate) Candidate   { c.MayHost = false; return c }
func joinOrder(c Candidate, o uint64) Candidate {
	c.JoinOrder = o
	return c
}

func TestElect(t *testing.T) {
	tests := []struct {
		name    string
		members []Candidate
		pinned  []Identity
		want    PeerIndex
		wantOK  bool
	}{
		{name: "empty room", want: 0, wantOK: false},
		{
			name:    "first member of an empty room is elected unsynced",
			members: []Candidate{unsynced(cand(1, "a/1", 0))},
			want:    1, wantOK: true,
		},
		{
			name:    "pinned order beats power",
			members: []Candidate{cand(1, "a/1", 100), cand(2, "p2/x", 0), cand(3, "p1/x", 0)},
			pinned:  []Identity{"p1/x", "p2/x"},
			want:    3, wantOK: true,
		},
		{
			name:    "pinned order: second pinned when the first is absent",
			members: []Candidate{cand(1, "a/1", 100), cand(2, "p2/x", 0)},
			pinned:  []Identity{"p1/x", "p2/x"},
			want:    2, wantOK: true,
		},
		{
			name:    "pinned absent falls through to power",
			members: []Candidate{cand(1, "a/1", 10), cand(2, "b/1", 50)},
			pinned:  []Identity{"p1/x"},
			want:    2, wantOK: true,
		},
		{
			name:    "pinned but unsynced is not eligible",
			members: []Candidate{cand(1, "a/1", 0), unsynced(cand(2, "p1/x", 0))},
			pinned:  []Identity{"p1/x"},
			want:    1, wantOK: true,
		},
		{
			name:    "pinned but may not host is skipped",
			members: []Candidate{cand(1, "a/1", 0), noHost(cand(2, "p1/x", 0)), cand(3, "p2/x", 0)},
			pinned:  []Identity{"p1/x", "p2/x"},
			want:    3, wantOK: true,
		},
		{
			name:    "pinned bare user matches any device, ranked by the other rules",
			members: []Candidate{cand(1, "a/1", 90), cand(2, "p/laptop", 1), cand(3, "p/server", 5)},
			pinned:  []Identity{"p"},
			want:    3, wantOK: true,
		},
		{
			name:    "pinned bare user does not match a longer user name",
			members: []Candidate{cand(1, "a/1", 0), cand(2, "pp/x", 0)},
			pinned:  []Identity{"p"},
			want:    1, wantOK: true,
		},
		{
			name:    "empty pinned entry matches nothing",
			members: []Candidate{cand(1, "a/1", 0), cand(2, "b/1", 5)},
			pinned:  []Identity{""},
			want:    2, wantOK: true,
		},
		{
			name:    "highest power level",
			members: []Candidate{cand(1, "a/1", 10), cand(2, "b/1", 50), cand(3, "c/1", 20)},
			want:    2, wantOK: true,
		},
		{
			name:    "negative power levels",
			members: []Candidate{cand(1, "a/1", -10), cand(2, "b/1", -5)},
			want:    2, wantOK: true,
		},
		{
			name:    "equal power: earliest join",
			members: []Candidate{joinOrder(cand(1, "a/1", 5), 9), joinOrder(cand(2, "b/1", 5), 3), joinOrder(cand(3, "c/1", 5), 7)},
			want:    2, wantOK: true,
		},
		{
			name:    "equal power and join: lowest identity",
			members: []Candidate{joinOrder(cand(1, "b/1", 5), 1), joinOrder(cand(2, "a/2", 5), 1), joinOrder(cand(3, "a/3", 5), 1)},
			want:    2, wantOK: true,
		},
		{
			name:    "identity compare is by string: a/x sorts before a~/x",
			members: []Candidate{joinOrder(cand(1, "a~/x", 5), 1), joinOrder(cand(2, "a/x", 5), 1)},
			want:    2, wantOK: true,
		},
		{
			name:    "everything equal: lowest peer index",
			members: []Candidate{joinOrder(cand(7, "a/1", 5), 1), joinOrder(cand(4, "a/1", 5), 1)},
			want:    4, wantOK: true,
		},
		{
			name:    "unsynced members are not eligible",
			members: []Candidate{cand(1, "a/1", 0), unsynced(cand(2, "b/1", 100))},
			want:    1, wantOK: true,
		},
		{
			name:    "may-host false is never elected",
			members: []Candidate{noHost(cand(1, "a/1", 100)), cand(2, "b/1", 0)},
			want:    2, wantOK: true,
		},
		{
			name:    "nobody may host",
			members: []Candidate{noHost(cand(1, "a/1", 100)), noHost(unsynced(cand(2, "b/1", 0)))},
			want:    0, wantOK: false,
		},
		{
			name:    "nobody eligible: fallback among all members that may host",
			members: []Candidate{unsynced(cand(1, "a/1", 10)), unsynced(cand(2, "b/1", 30)), noHost(unsynced(cand(3, "c/1", 99)))},
			want:    2, wantOK: true,
		},
		{
			name:    "fallback still honours pinned order",
			members: []Candidate{unsynced(cand(1, "a/1", 10)), unsynced(cand(2, "p/1", 0))},
			pinned:  []Identity{"p/1"},
			want:    2, wantOK: true,
		},
		{
			name:    "a synced member that may not host does not disable the fallback",
			members: []Candidate{noHost(cand(1, "a/1", 10)), unsynced(cand(2, "b/1", 0))},
			want:    2, wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Elect(tt.members, tt.pinned)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("Elect = (%d, %v), want (%d, %v)", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestElectOrderIndependent checks that the result does not depend on the
// order of the members, which peers recomputing the election rely on.
func TestElectOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []Identity{"a/1", "a/2", "b/1", "p/1", "p/2", "c/9"}
	for iter := range 2000 {
		n := 1 + rng.IntN(6)
		ms := make([]Candidate, n)
		for i := range ms {
			ms[i] = Candidate{
				Index:     PeerIndex(1 + rng.IntN(8)),
				ID:        ids[rng.IntN(len(ids))],
				Power:     rng.IntN(3),
				JoinOrder: uint64(rng.IntN(4)),
				MayHost:   rng.IntN(4) != 0,
				Synced:    rng.IntN(2) == 0,
			}
		}
		pinned := []Identity{"p/2", "p"}[:rng.IntN(3)]
		want, wantOK := Elect(ms, pinned)
		rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		// Duplicate indices with different attributes make "the member with
		// index X" ambiguous, so compare the winner's attributes instead.
		got, gotOK := Elect(ms, pinned)
		if gotOK != wantOK || (got != want && !sameRank(ms, got, want)) {
			t.Fatalf("iteration %d: Elect after shuffle = (%d, %v), before (%d, %v); members %+v", iter, got, gotOK, want, wantOK, ms)
		}
	}
}

func sameRank(ms []Candidate, a, b PeerIndex) bool {
	for _, x := range ms {
		if x.Index == a {
			for _, y := range ms {
				if y.Index == b && x.Power == y.Power && x.JoinOrder == y.JoinOrder && x.ID == y.ID {
					return true
				}
			}
		}
	}
	return false
}

func BenchmarkElect(b *testing.B) {
	ms := make([]Candidate, 64)
	for i := range ms {
		ms[i] = cand(PeerIndex(i+1), NewIdentity("user", string(rune('a'+i%26))), i%5)
	}
	pinned := []Identity{"nobody/1", "user/z"}
	b.ReportAllocs()
	for b.Loop() {
		Elect(ms, pinned)
	}
}

func TestElectAllocs(t *testing.T) {
	ms := []Candidate{cand(1, "a/1", 0), cand(2, "b/1", 5), cand(3, "p/1", 0)}
	pinned := []Identity{"p"}
	if n := testing.AllocsPerRun(100, func() { Elect(ms, pinned) }); n != 0 {
		t.Fatalf("Elect allocates %v times", n)
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name         string
		id           Identity
		user, device string
	}{
		{"user and device", "alice/tab-1", "alice", "tab-1"},
		{"bare user", "alice", "alice", ""},
		{"server device", "bob/~3", "bob", "~3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.id.User() != tt.user || tt.id.Device() != tt.device {
				t.Fatalf("User, Device = %q, %q; want %q, %q", tt.id.User(), tt.id.Device(), tt.user, tt.device)
			}
			if NewIdentity(tt.user, tt.device) != tt.id {
				t.Fatalf("NewIdentity(%q, %q) = %q", tt.user, tt.device, NewIdentity(tt.user, tt.device))
			}
		})
	}
}

// TestPreempts: a running host hands over only to a member that ranks before it by pinned order
// or power, never by join order alone.
func TestPreempts(t *testing.T) {
	pinned := []Identity{"dedicated", "backup/box"}
	c := func(id Identity, power int, order uint64) Candidate {
		return Candidate{Index: PeerIndex(order), ID: id, Power: power, JoinOrder: order, MayHost: true, Synced: true}
	}
	tests := []struct {
		name        string
		winner, cur Candidate
		want        bool
	}{
		{"earlier join alone", c("a/1", 0, 2), c("b/1", 0, 3), false},
		{"higher power", c("a/1", 5, 9), c("b/1", 0, 3), true},
		{"lower power, earlier join", c("a/1", 0, 1), c("b/1", 1, 3), false},
		{"pinned over unpinned", c("dedicated/x", 0, 9), c("b/1", 9, 1), true},
		{"earlier pin over later pin", c("dedicated/x", 0, 9), c("backup/box", 0, 1), true},
		{"later pin over earlier pin", c("backup/box", 9, 1), c("dedicated/x", 0, 9), false},
		{"same pin, higher power", c("dedicated/b", 2, 9), c("dedicated/a", 1, 1), true},
		{"same pin, earlier join", c("dedicated/b", 0, 1), c("dedicated/a", 0, 9), false},
		{"unpinned over pinned", c("a/1", 99, 1), c("dedicated/x", 0, 9), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Preempts(tt.winner, tt.cur, pinned); got != tt.want {
				t.Fatalf("Preempts = %v, want %v", got, tt.want)
			}
		})
	}
}
