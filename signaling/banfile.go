package signaling

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// BanFile is a BanStore in one JSON file: a single node's bans (`concord serve --data` keeps
// them in its data directory). Each change rewrites the file: a temporary file, synced, renamed
// over the path, so a crash leaves the old set or the new one, never half of one. Bans past
// their expiry are dropped on the way.
type BanFile struct {
	path string

	mu     sync.Mutex // guards bans
	bans   map[banKey]Ban
	loaded bool
}

type banKey struct {
	room   RoomID
	target Identity
}

// NewBanFile returns the BanFile at path; a missing file holds no bans.
func NewBanFile(path string) *BanFile { return &BanFile{path: path} }

// maxBanFile bounds the file LoadBans reads.
const maxBanFile = 64 << 20

// LoadBans implements BanStore. It reads the file again (another process may have written it
// since).
func (f *BanFile) LoadBans() ([]Ban, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loaded = false
	if err := f.load(); err != nil {
		return nil, err
	}
	return f.list(), nil
}

// PutBan implements BanStore.
func (f *BanFile) PutBan(b Ban) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.load(); err != nil {
		return err
	}
	f.bans[banKey{b.Room, b.Target}] = b
	return f.save()
}

// DeleteBan implements BanStore.
func (f *BanFile) DeleteBan(room RoomID, target Identity) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.load(); err != nil {
		return err
	}
	delete(f.bans, banKey{room, target})
	return f.save()
}

func (f *BanFile) load() error {
	if f.loaded {
		return nil
	}
	f.bans = make(map[banKey]Ban)
	b, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.loaded = true
		return nil
	case err != nil:
		return err
	case len(b) > maxBanFile:
		return fmt.Errorf("signaling: %s: %d bytes, more than %d", f.path, len(b), maxBanFile)
	}
	var bans []Ban
	if err := json.Unmarshal(b, &bans); err != nil {
		return fmt.Errorf("signaling: %s: %w", f.path, err)
	}
	for _, b := range bans {
		f.bans[banKey{b.Room, b.Target}] = b
	}
	f.loaded = true
	return nil
}

// list is the bans that hold, by room and target.
func (f *BanFile) list() []Ban {
	now := time.Now()
	out := []Ban{}
	for _, b := range f.bans {
		if b.active(now) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b Ban) int {
		return cmp.Or(cmp.Compare(a.Room, b.Room), cmp.Compare(a.Target, b.Target))
	})
	return out
}

func (f *BanFile) save() error {
	b, err := json.MarshalIndent(f.list(), "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), filepath.Base(f.path)+".*.tmp")
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
	return os.Rename(tmp.Name(), f.path)
}
