package peer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/authority"
)

// The member's fence against testdata/peer/fencing.json, the cases the browser member checks too
// (web/test/fencing.test.js): signaling's announcements go through newTerm, host messages through
// fenced, on a member role that holds nothing else.
func TestFencingVectors(t *testing.T) {
	var v struct {
		Vectors []struct {
			Name, Why string
			Steps     []struct {
				Do         string
				Term       Term
				Host, From PeerIndex
				Fence      struct {
					Term Term
					Host PeerIndex
				}
				Want string
			}
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "testdata", "peer", "fencing.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, c := range v.Vectors {
		m := &memberRole{roleBase: roleBase{log: zerolog.Nop(), count: &counters{}}}
		for i, s := range c.Steps {
			term, host := m.fence.Term(), m.fence.Host()
			switch s.Do {
			case "announce":
				m.newTerm(s.Term, s.Host)
				term, host = s.Fence.Term, s.Fence.Host
			case "message":
				m.hostLink, m.linkTerm = &remote{idx: s.From}, s.Term
				fenced := m.count.fenced.Load()
				got := ""
				var re *authority.RejectError
				if err := m.fence.Accept(s.Term, s.From); errors.As(err, &re) {
					got = strings.ReplaceAll(re.Code.String(), " ", "_")
				} else if err != nil {
					t.Fatalf("%s, step %d: Accept returned %v", c.Name, i+1, err)
				}
				if got != s.Want {
					t.Errorf("%s (%s), step %d: message of term %d from %d: %q, want %q", c.Name, c.Why, i+1, s.Term, s.From, got, s.Want)
				}
				want := uint64(0)
				if got != "" {
					want = 1
				}
				if m.fenced() != (got != "") || m.count.fenced.Load()-fenced != want {
					t.Errorf("%s, step %d: fenced() or Status.Fenced disagrees with Accept (%q)", c.Name, i+1, got)
				}
			default:
				t.Fatalf("%s, step %d: unknown step %q", c.Name, i+1, s.Do)
			}
			if m.fence.Term() != term || m.fence.Host() != host {
				t.Errorf("%s (%s), step %d: fence (%d, %d), want (%d, %d)", c.Name, c.Why, i+1, m.fence.Term(), m.fence.Host(), term, host)
			}
		}
	}
}
