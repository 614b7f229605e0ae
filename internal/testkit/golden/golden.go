// Package golden keeps the vector files that Go tests write and the JavaScript tests read (the
// contract between the two implementations): with -update a test rewrites its file from what Go
// computes now; otherwise the file must hold exactly those bytes. Only tests import it.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = boolFlag("update", "rewrite the shared vector files from what Go computes now")

// boolFlag defines a bool flag, or reuses one of that name that a test file of the same binary
// already defined (two definitions would panic).
func boolFlag(name, usage string) func() bool {
	if f := flag.Lookup(name); f != nil {
		return func() bool { return f.Value.String() == "true" }
	}
	p := flag.Bool(name, false, usage)
	return func() bool { return *p }
}

// Updating reports whether the test binary runs with -update.
func Updating() bool { return update() }

// Check writes got to path under -update and reports true; otherwise it fails t unless path
// holds exactly got. rewrite is the command that rewrites the file, for the failure message.
func Check(t testing.TB, path string, got []byte, rewrite string) (updated bool) {
	t.Helper()
	if Updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", path, len(got))
		return true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with %s)", err, rewrite)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what Go computes now: the file is stale or the encoding changed "+
			"(if intended, rewrite it with %s and re-run the JavaScript tests)", path, rewrite)
	}
	return false
}
