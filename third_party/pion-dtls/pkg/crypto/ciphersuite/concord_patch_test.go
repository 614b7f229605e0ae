// SPDX-FileCopyrightText: 2026 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

// CONCORD-PATCH: tests of Concord's changes (see CONCORD-PATCH.md).

package ciphersuite

import (
	"bytes"
	"testing"

	"github.com/pion/dtls/v3/pkg/protocol"
	"github.com/pion/dtls/v3/pkg/protocol/recordlayer"
)

// TestEncryptToMatchesEncrypt: a record sealed into a caller's buffer — too small, exactly
// large enough, or larger — is Encrypt's record byte
// for byte, and what lies before dst's start is untouched.
func TestEncryptToMatchesEncrypt(t *testing.T) {
	key, iv := bytes.Repeat([]byte{1}, 16), []byte{2, 3, 4, 5}
	g, err := NewGCM(key, iv, key, iv)
	if err != nil {
		t.Fatal(err)
	}
	pkt := &recordlayer.RecordLayer{Header: recordlayer.Header{
		ContentType: protocol.ContentTypeApplicationData, Version: protocol.Version1_2, Epoch: 1, SequenceNumber: 77,
	}}
	payload := bytes.Repeat([]byte{0x5a}, 1100)
	pkt.Header.ContentLen = uint16(len(payload))
	header, err := pkt.Header.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	raw := append(header, payload...)
	want, err := g.Encrypt(pkt, raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, room := range []int{0, len(want), len(want) + 64} {
		buf := make([]byte, 3, 3+room)
		buf[0], buf[1], buf[2] = 0xa, 0xb, 0xc
		got, err := g.EncryptTo(buf[3:], pkt, raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("room %d: the record differs from Encrypt's", room)
		}
		if !bytes.Equal(buf[:3], []byte{0xa, 0xb, 0xc}) {
			t.Fatalf("room %d: bytes before dst were written", room)
		}
		if room >= len(want) && &got[0] != &buf[3:4][0] {
			t.Fatalf("room %d: the record is not in dst's array", room)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		dst := make([]byte, 0, len(want)+64)
		_, _ = g.EncryptTo(dst, pkt, raw)
	}); n > 3 { // dst itself (AllocsPerRun counts it), the additional data and the nonce pool's Get at worst
		t.Fatalf("EncryptTo with room allocates %.0f times", n)
	}
}
