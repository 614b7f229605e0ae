//go:build unix

package durable

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir/LOCK, so that two processes never run JetStream on one
// data directory (a serve and a `crdt export`, two serves). The kernel drops it when the process
// dies, kill -9 included.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("durable: data directory %s is in use by another process (stop that concord serve first): %w", dir, err)
	}
	return f, nil
}
