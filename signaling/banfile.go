package signaling

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// BanFile is a BanStore in one JSON file (a single node's bans; `concord serve --data` keeps
// them in its data directory). SaveBans writes a temporary file, syncs it and renames it over
// Path, so a crash leaves the old set or the new one, never half of one.
type BanFile struct {
	// Path is the file; a missing file holds no bans.
	Path string
}

// maxBanFile bounds the file LoadBans reads.
const maxBanFile = 64 << 20

// LoadBans implements BanStore.
func (f BanFile) LoadBans() ([]Ban, error) {
	b, err := os.ReadFile(f.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case len(b) > maxBanFile:
		return nil, fmt.Errorf("signaling: %s: %d bytes, more than %d", f.Path, len(b), maxBanFile)
	}
	var bans []Ban
	if err := json.Unmarshal(b, &bans); err != nil {
		return nil, fmt.Errorf("signaling: %s: %w", f.Path, err)
	}
	return bans, nil
}

// SaveBans implements BanStore.
func (f BanFile) SaveBans(bans []Ban) error {
	b, err := json.MarshalIndent(bans, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), filepath.Base(f.Path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.Path)
}
