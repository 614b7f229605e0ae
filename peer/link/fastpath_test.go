package link

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/pion/sctp"
)

// TestFastPaths: FastPaths is true exactly when pion/sctp is built from the carried copy
// (third_party/pion-sctp: this module's go.mod replaces it) and false with stock pion/sctp (from
// the module cache). It fails if the carried copy's methods drift from the interfaces of
// fastpath.go, which would otherwise silently turn the fast paths off. (A test binary records no
// dependencies in its build information, so the source file of a pion/sctp method tells.)
func TestFastPaths(t *testing.T) {
	pc := reflect.ValueOf((*sctp.Stream).WriteSCTP).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	var carried bool
	switch {
	case strings.Contains(file, "third_party/pion-sctp/"):
		carried = true
	case strings.Contains(file, "github.com/pion/sctp@"):
		carried = false
	default:
		t.Skipf("pion/sctp's source %q is neither the carried copy nor the module cache (-trimpath?)", file)
	}
	t.Logf("pion/sctp from %s", file)
	if got := FastPaths(); got != carried {
		t.Fatalf("FastPaths() = %v, but pion/sctp is built from %s", got, file)
	}
}
