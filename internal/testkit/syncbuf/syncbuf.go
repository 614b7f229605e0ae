package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use. The zero value is empty and unbounded.
type Buffer struct {
	// Limit, when positive, is how many bytes it keeps: writes past it are dropped (and
	// reported written), so that a chatty process cannot fill a test's memory.
	Limit int

	mu sync.Mutex // guards b
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Limit > 0 && s.b.Len() > s.Limit {
		return len(p), nil
	}
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bytes returns a copy of what was written so far.
func (s *Buffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}
