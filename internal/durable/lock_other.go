//go:build !unix

package durable

import (
	"os"
	"path/filepath"
)

// lockDir opens dir/LOCK without locking it: no flock here; run one process per directory.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
}
