package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/concordrtc/concord/crdt"
)

const exampleScene = "../../crdt/testdata/dcl/example-scene.crdt"

// splitMessages cuts an ADR-117 stream into its messages.
func splitMessages(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	var m crdt.Message
	for off := 0; off < len(b); {
		n, err := crdt.ConsumeMessage(b[off:], &m)
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		out = append(out, b[off:off+n])
		off += n
	}
	return out
}

func runCmd(t *testing.T, stdin []byte, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, bytes.NewReader(stdin), &o, &e)
	return o.String(), e.String(), code
}

func TestCRDTStateMatchesReference(t *testing.T) {
	out, errOut, code := runCmd(t, nil, "crdt", "state", exampleScene)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want, err := os.ReadFile("../../crdt/testdata/dcl/example-scene.state.json")
	if err != nil {
		t.Fatal(err)
	}
	// The reference file is indented; compare the canonical compact forms.
	var compact bytes.Buffer
	if err := compactJSON(&compact, want); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != compact.String() {
		t.Fatalf("state differs from what @dcl/ecs converged to:\n got %s\nwant %s", out, compact.String())
	}
}

// TestCRDTStatePermutationsAndDuplicates: any permutation and duplication of the messages of a
// stream, split over several files or read from stdin, prints byte-identical output.
func TestCRDTStatePermutationsAndDuplicates(t *testing.T) {
	scene, err := os.ReadFile(exampleScene)
	if err != nil {
		t.Fatal(err)
	}
	want, _, code := runCmd(t, nil, "crdt", "state", exampleScene)
	if code != 0 {
		t.Fatal("reference run failed")
	}
	msgs := splitMessages(t, scene)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		var all [][]byte
		for _, m := range msgs {
			for range 1 + rng.IntN(3) {
				all = append(all, m)
			}
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		cut := rng.IntN(len(all) + 1)
		a := filepath.Join(dir, "a.crdt")
		if err := os.WriteFile(a, bytes.Join(all[:cut], nil), 0o644); err != nil {
			t.Fatal(err)
		}
		got, errOut, code := runCmd(t, bytes.Join(all[cut:], nil), "crdt", "state", a, "-")
		if code != 0 || got != want {
			t.Fatalf("trial %d: exit %d %s\n got %s\nwant %s", trial, code, errOut, got, want)
		}
	}
}

func TestCRDTStateMalformed(t *testing.T) {
	scene, err := os.ReadFile(exampleScene)
	if err != nil {
		t.Fatal(err)
	}
	msgs := splitMessages(t, scene)
	good := bytes.Join(msgs[:3], nil)
	bad := append(append([]byte(nil), good...), 0x30, 0, 0, 0, 1, 0, 0, 0, 1) // length 48, truncated
	f := filepath.Join(t.TempDir(), "broken.crdt")
	if err := os.WriteFile(f, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd(t, nil, "crdt", "state", exampleScene, f)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if out != "" {
		t.Fatalf("stdout not empty on error: %q", out)
	}
	if !strings.Contains(errOut, "broken.crdt") || !strings.Contains(errOut, "offset "+itoa(len(good))) {
		t.Fatalf("stderr does not name the file and offset %d: %q", len(good), errOut)
	}
}

func TestCRDTDump(t *testing.T) {
	out, errOut, code := runCmd(t, nil, "crdt", "dump", exampleScene)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	scene, _ := os.ReadFile(exampleScene)
	if lines := strings.Count(out, "\n"); lines != len(splitMessages(t, scene)) {
		t.Fatalf("%d lines for %d messages:\n%s", lines, len(splitMessages(t, scene)), out)
	}
	if !strings.Contains(out, "PUT_COMPONENT") {
		t.Fatalf("no message types in dump:\n%s", out)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func compactJSON(dst *bytes.Buffer, src []byte) error { return json.Compact(dst, src) }
