package crdt

import (
	"bytes"
	"testing"
)

// TestForgetAndPartialDigests: a replica that forgets the numbers a filter rejects has the digests
// and state BucketDigestsOf computes for that filter on the whole replica, and merges a forgotten
// number again from scratch.
func TestForgetAndPartialDigests(t *testing.T) {
	full := New(Config{})
	for n := uint16(600); n < 700; n++ {
		e := NewEntity(n, 0)
		full.Put(e, 1024, []byte{byte(n)})
		full.AppendValue(e, 2000, []byte{byte(n), 1})
	}
	full.DeleteEntity(NewEntity(650, 3)) // a deleted record, and a number whose entries it removed
	keep := func(n uint16) bool { return n%3 == 0 }

	part := New(Config{})
	if _, err := part.MergeStream(full.AppendState(nil)); err != nil {
		t.Fatal(err)
	}
	for n := uint16(600); n < 700; n++ {
		if !keep(n) && !part.Forget(n) {
			t.Fatalf("Forget(%d) dropped nothing", n)
		}
	}
	if part.Forget(601) {
		t.Fatal("a second Forget dropped something")
	}
	const buckets = 16
	want := full.BucketDigestsOf(buckets, keep, nil)
	got := part.BucketDigests(buckets, nil)
	for b := range buckets {
		if got[b] != want[b] {
			t.Fatalf("bucket %d: partial replica %x, filtered digest %x", b, got[b], want[b])
		}
	}
	var sum uint64
	for _, d := range got {
		sum += d
	}
	if sum != part.Hash() {
		t.Fatalf("digests add up to %x, hash %x", sum, part.Hash())
	}
	// A forgotten number merges again as new, deletions included.
	again := New(Config{})
	if _, err := again.MergeStream(full.AppendState(nil)); err != nil {
		t.Fatal(err)
	}
	again.Forget(650)
	if _, ok := again.DeletedVersion(650); ok {
		t.Fatal("650's deleted record survived Forget")
	}
	if _, err := again.MergeStream(full.AppendState(nil)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.AppendState(nil), full.AppendState(nil)) || again.Hash() != full.Hash() {
		t.Fatal("re-merging the whole state after Forget does not give it back")
	}
}
