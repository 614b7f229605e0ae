// SPDX-FileCopyrightText: 2026 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

// CONCORD-PATCH: tests of Concord's changes (see CONCORD-PATCH.md).

package dtls

import (
	"bytes"
	"errors"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/transport/v5/dpipe"
)

// discardConn passes writes through until discard is set, then counts and drops them, so that
// what a Write costs is measured without the peer's reads.
type discardConn struct {
	net.Conn
	discard atomic.Bool
	writes  atomic.Int64
	lastLen atomic.Int64
}

func (d *discardConn) Write(p []byte) (int, error) {
	if d.discard.Load() {
		d.writes.Add(1)
		d.lastLen.Store(int64(len(p)))

		return len(p), nil
	}

	return d.Conn.Write(p)
}

// TestConcordWriteCost: an application data Write makes one record and one write, allocates
// about one copy of the payload (the ciphertext; upstream allocated about four) and few objects
// (upstream also started two goroutines with their channels and contexts).
func TestConcordWriteCost(t *testing.T) {
	ca, cb := dpipe.Pipe()
	dc := &discardConn{Conn: ca}
	client, server, err := pipeConn(dc, cb)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = client.Close()
		_ = server.Close()
	}()
	payload := bytes.Repeat([]byte{0xab}, 1100)
	// The connection works: a record arrives and decrypts.
	if _, err := client.Write(payload); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := server.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], payload) {
		t.Fatalf("server read %d bytes, %v", n, err)
	}

	dc.discard.Store(true)
	const writes = 1000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range writes {
		if _, err := client.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := dc.writes.Load(); got != writes {
		t.Fatalf("%d writes reached the connection, want %d", got, writes)
	}
	if last := dc.lastLen.Load(); last != int64(13+8+len(payload)+16) {
		t.Fatalf("last record is %d bytes, want header 13 + nonce 8 + payload %d + tag 16", last, len(payload))
	}
	bytesPerWrite := float64(after.TotalAlloc-before.TotalAlloc) / writes
	objectsPerWrite := float64(after.Mallocs-before.Mallocs) / writes
	t.Logf("per Write: %.0f bytes, %.1f objects", bytesPerWrite, objectsPerWrite)
	// The payload is copied nowhere but into the reused record and sealing buffers (item 4:
	// before it, the ciphertext allocated 1,137 bytes per Write).
	if bytesPerWrite > float64(len(payload))/4 {
		t.Errorf("a Write of %d bytes allocates %.0f bytes, want < %d", len(payload), bytesPerWrite, len(payload)/4)
	}
	if objectsPerWrite > 8 {
		t.Errorf("a Write allocates %.1f objects, want ≤ 8", objectsPerWrite)
	}
}

// TestConcordSealedRecordsIntact: records sealed into the reused buffer each arrive whole,
// whatever their sizes, in order, and larger records grow the buffer without harm.
func TestConcordSealedRecordsIntact(t *testing.T) {
	client, server, err := pipeMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = client.Close()
		_ = server.Close()
	}()
	sizes := []int{1, 1100, 17, 4000, 1200, 3, 8000, 600}
	errc := make(chan error, 1)
	go func() {
		for i, n := range sizes {
			if _, err := client.Write(bytes.Repeat([]byte{byte(i + 1)}, n)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	buf := make([]byte, 16384)
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i, n := range sizes {
		got, err := server.Read(buf)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if want := bytes.Repeat([]byte{byte(i + 1)}, n); !bytes.Equal(buf[:got], want) {
			t.Fatalf("record %d: got %d bytes (first %x), want %d bytes of %x", i, got, buf[:min(got, 4)], n, i+1)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestConcordWriteAfterDeadlineAndClose: without the context, a write deadline in the past and
// Close still fail a Write.
func TestConcordWriteAfterDeadlineAndClose(t *testing.T) {
	client, server, err := pipeMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = server.Close() }()
	if err := client.SetWriteDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	var ne net.Error
	if _, err := client.Write([]byte("late")); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Write after the deadline: %v, want a timeout", err)
	}
	if err := client.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("on time")); err != nil {
		t.Fatalf("Write without a deadline: %v", err)
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("closed")); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Write after Close: %v, want ErrConnClosed", err)
	}
}

// TestConcordCloseEndsDirectRead: once the handshake is done the read loop reads the next
// connection directly (readDirect, no netctx goroutine); Close still ends it, so Close returns
// and a blocked Read fails, while records keep arriving before that.
func TestConcordCloseEndsDirectRead(t *testing.T) {
	client, server, err := pipeMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	for i := range 50 {
		if _, err := client.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := server.Read(buf); err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("record %d: read %x, %v", i, buf[:n], err)
		}
	}
	_ = server.SetReadDeadline(time.Time{})
	readErr := make(chan error, 1)
	go func() {
		_, err := server.Read(make([]byte, 16))
		readErr <- err
	}()
	closed := make(chan error, 1)
	go func() { closed <- server.Close() }()
	for _, c := range []struct {
		what string
		ch   chan error
	}{{"Close", closed}, {"the blocked Read", readErr}} {
		select {
		case err := <-c.ch:
			if c.what != "Close" && err == nil {
				t.Fatalf("%s returned no error", c.what)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not return within 5 s", c.what)
		}
	}
}
