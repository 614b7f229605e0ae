// SPDX-FileCopyrightText: 2026 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

// CONCORD-PATCH: tests of Concord's changes (see CONCORD-PATCH.md).

package recordlayer

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pion/dtls/v3/pkg/protocol"
)

// TestAppendToMatchesMarshal: AppendTo appends exactly Marshal's bytes, with and without a
// connection ID, and refuses a sequence number Marshal refuses.
func TestAppendToMatchesMarshal(t *testing.T) {
	for _, h := range []Header{
		{ContentType: protocol.ContentTypeApplicationData, Version: protocol.Version1_2, Epoch: 1, SequenceNumber: 0x0102030405, ContentLen: 1100},
		{ContentType: protocol.ContentTypeConnectionID, Version: protocol.Version1_2, Epoch: 0xfffe, SequenceNumber: MaxSequenceNumber, ContentLen: 7, ConnectionID: []byte{9, 8, 7}},
	} {
		want, err := h.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.AppendTo([]byte{0xaa})
		if err != nil || !bytes.Equal(got, append([]byte{0xaa}, want...)) {
			t.Fatalf("AppendTo: %x, %v; want aa%x", got, err, want)
		}
	}
	h := Header{SequenceNumber: MaxSequenceNumber + 1}
	if _, err := h.AppendTo(nil); !errors.Is(err, errSequenceNumberOverflow) {
		t.Fatalf("AppendTo of an overflowing sequence number: %v", err)
	}
}
