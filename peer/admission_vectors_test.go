package peer

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/authority"
	"github.com/concordrtc/concord/crdt"
	"github.com/concordrtc/concord/crdt/schema"
	"github.com/concordrtc/concord/peer/link"
	"github.com/concordrtc/concord/signaling/sigclient"
)

// The host's admission rules against testdata/peer/admission.json, the cases the browser host
// checks too (web/test/admission.test.js): the authority table, and the gate and window of a host
// whose state the vector gives.

type vectorRecord struct {
	Kind any // "host", "avatar", "lock", or a number that is no kind
	Peer PeerIndex
}

func (r vectorRecord) record(t *testing.T) authority.Record {
	t.Helper()
	switch k := r.Kind.(type) {
	case string:
		kinds := map[string]authority.Kind{"host": authority.KindHost, "avatar": authority.KindAvatar, "lock": authority.KindLock}
		kind, ok := kinds[k]
		if !ok {
			t.Fatalf("record kind %q", k)
		}
		return authority.Record{Kind: kind, Peer: r.Peer}
	case float64:
		return authority.Record{Kind: authority.Kind(k), Peer: r.Peer}
	}
	t.Fatalf("record kind %v", r.Kind)
	return authority.Record{}
}

type admissionVectors struct {
	Authority []struct {
		Name, Why string
		Steps     []struct {
			Do       string
			Peer     PeerIndex
			Entity   Entity
			Relayed  bool
			At       int64
			Kind     any
			Want     string
			From, To PeerIndex
			Avatars  []Entity
			Released [][2]uint64
		}
	}
	Stamps []struct {
		Name, Why string
		Clock     crdt.Timestamp
		Steps     []struct {
			At   int64
			TS   crdt.Timestamp
			Want bool
		}
	}
	Strikes []struct {
		Name, Why string
		Steps     []struct {
			At      int64
			N       int
			Dropped bool
		}
	}
	App []struct {
		Name, Why string
		Steps     []struct {
			At         int64
			N, Allowed int
		}
	}
	Corrections []struct {
		Name, Why string
		Relayed   bool
		// Lacked: the host held nothing of the message's entity when the batch first named it;
		// Waiting: the sender's avatar waits for this answer.
		Lacked, Waiting bool
		Live            []struct {
			Entity  uint16
			Version uint16
			Record  *vectorRecord
		}
		Deleted []struct {
			Entity, Version uint16
		}
		HeldAtStart [][2]uint16
		Earlier     []PeerIndex
		Message     struct {
			Type            string
			Entity, Version uint16
			Component       crdt.ComponentID
			TS              crdt.Timestamp
			Record          *vectorRecord
			Data            string
		}
		Want string
	}
}

func readAdmissionVectors(t *testing.T) admissionVectors {
	var v admissionVectors
	b, err := os.ReadFile(filepath.Join("..", "testdata", "peer", "admission.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Authority) == 0 || len(v.Stamps) == 0 || len(v.Strikes) == 0 || len(v.App) == 0 || len(v.Corrections) == 0 {
		t.Fatal("a section of admission.json is empty")
	}
	return v
}

// rejectName is the vectors' name of an authority refusal ("" for nil).
func rejectName(t *testing.T, err error) string {
	t.Helper()
	var re *authority.RejectError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &re):
		return strings.ReplaceAll(re.Code.String(), " ", "_")
	case errors.Is(err, authority.ErrUnknownKind):
		return "unknown_kind"
	}
	t.Fatalf("unexpected error %v", err)
	return ""
}

// vectorEnv is a host's env that knows the time and nothing else: a roster of nobody, sends that
// go nowhere. Anything more is a test bug (a nil env panics).
type vectorEnv struct {
	env
	t time.Time
}

func (e *vectorEnv) now() time.Time                         { return e.t }
func (e *vectorEnv) roster() map[PeerIndex]sigclient.Member { return nil }
func (e *vectorEnv) send(*remote, link.Channel, []byte)     {}

// vectorStart is the time a vector's "at" counts from.
var vectorStart = time.Unix(1_000_000, 0)

func at(ms int64) time.Time { return vectorStart.Add(time.Duration(ms) * time.Millisecond) }

func TestAdmissionVectors(t *testing.T) {
	v := readAdmissionVectors(t)
	t.Run("authority", func(t *testing.T) {
		for _, c := range v.Authority {
			tab := authority.New(1, authority.Config{})
			for i, s := range c.Steps {
				var tr authority.Transfer
				var err error
				transfer := false
				switch s.Do {
				case "write":
					err = tab.AdmitWrite(s.Peer, s.Entity)
				case "correct":
					err = tab.AdmitCorrection(s.Peer, s.Entity, s.Relayed)
				case "lock":
					tr, err = tab.RequestLock(s.Peer, s.Entity, at(s.At))
					transfer = true
				case "grant":
					tr, err = tab.Grant(s.Peer, s.Entity, at(s.At))
					transfer = true
				case "relinquish":
					tr, err = tab.Relinquish(s.Peer, s.Entity)
					transfer = true
				case "avatar":
					tr, err = tab.SetAvatar(s.Entity, s.Peer)
					transfer = true
				case "restore":
					err = tab.Restore(s.Entity, vectorRecord{Kind: s.Kind, Peer: s.Peer}.record(t), at(s.At))
				case "touch":
					tab.Touch(s.Peer, at(s.At))
				case "despawn":
					tab.Despawn(s.Entity)
				case "expire":
					if got, want := releasedOf(tab.Expire(at(s.At))), s.Released; !slices.Equal(got, want) {
						t.Errorf("%s, step %d: expire at %d released %v, want %v", c.Name, i+1, s.At, got, want)
					}
				case "leave":
					avatars, released := tab.Leave(s.Peer)
					if !slices.Equal(avatars, s.Avatars) || !slices.Equal(releasedOf(released), s.Released) {
						t.Errorf("%s, step %d: leave of %d: avatars %v, released %v; want %v, %v", c.Name, i+1, s.Peer, avatars, releasedOf(released), s.Avatars, s.Released)
					}
				default:
					t.Fatalf("%s, step %d: unknown step %q", c.Name, i+1, s.Do)
				}
				if got := rejectName(t, err); got != s.Want {
					t.Errorf("%s (%s), step %d: %s by %d on %d: %q, want %q", c.Name, c.Why, i+1, s.Do, s.Peer, s.Entity, got, s.Want)
				}
				if transfer && err == nil && (tr.Entity != s.Entity || tr.From != s.From || tr.To != s.To) {
					t.Errorf("%s, step %d: %s by %d on %d: transfer %+v, want %d → %d", c.Name, i+1, s.Do, s.Peer, s.Entity, tr, s.From, s.To)
				}
			}
		}
	})
	t.Run("stamps", func(t *testing.T) {
		for _, c := range v.Stamps {
			g, hm := vectorGate(t)
			g.w.r.ObserveClock(c.Clock)
			for i, s := range c.Steps {
				g.env.(*vectorEnv).t = at(s.At)
				if got := g.stampOK(hm, s.TS); got != s.Want {
					t.Errorf("%s (%s), step %d: stamp %d at %d ms: %v, want %v", c.Name, c.Why, i+1, s.TS, s.At, got, s.Want)
				}
			}
		}
	})
	t.Run("strikes", func(t *testing.T) {
		for _, c := range v.Strikes {
			g, hm := vectorGate(t)
			for i, s := range c.Steps {
				g.env.(*vectorEnv).t = at(s.At)
				for range s.N {
					_ = g.strike(hm, "vector")
				}
				if hm.refused != s.Dropped {
					t.Errorf("%s (%s), step %d: dropped %v, want %v", c.Name, c.Why, i+1, hm.refused, s.Dropped)
				}
			}
		}
	})
	t.Run("app", func(t *testing.T) {
		for _, c := range v.App {
			g, hm := vectorGate(t)
			for i, s := range c.Steps {
				g.env.(*vectorEnv).t = at(s.At)
				allowed := 0
				for range s.N {
					if g.appAllowed(hm) {
						allowed++
					}
				}
				if allowed != s.Allowed {
					t.Errorf("%s (%s), step %d: %d of %d allowed, want %d", c.Name, c.Why, i+1, allowed, s.N, s.Allowed)
				}
			}
		}
	})
	t.Run("corrections", func(t *testing.T) {
		for _, c := range v.Corrections {
			g, hm := vectorGate(t)
			w := g.w
			w.r.ObserveClock(10000)
			win := &window{roleBase: g.roleBase, gate: g, present: map[PeerIndex]bool{}, heldAtStart: map[Entity]bool{}}
			for _, l := range c.Live {
				e := crdt.NewEntity(l.Entity, l.Version)
				in := &entityInfo{}
				if l.Record != nil {
					in.auth = l.Record.record(t)
				}
				w.ents[e] = in
				w.byNumber.set(e)
			}
			for _, d := range c.Deleted {
				w.r.Merge(&crdt.Message{Type: crdt.DeleteEntity, Entity: crdt.NewEntity(d.Entity, d.Version)})
			}
			for _, h := range c.HeldAtStart {
				win.heldAtStart[crdt.NewEntity(h[0], h[1])] = true
			}
			for _, idx := range c.Earlier {
				win.present[idx] = true
			}
			msg := c.Message
			types := map[string]crdt.MessageType{"put": crdt.PutComponent, "put_network": crdt.PutComponentNetwork, "delete_entity": crdt.DeleteEntity, "delete_entity_network": crdt.DeleteEntityNetwork}
			typ, ok := types[msg.Type]
			if !ok {
				t.Fatalf("%s: message type %q", c.Name, msg.Type)
			}
			m := crdt.Message{Type: typ, Entity: crdt.NewEntity(msg.Entity, msg.Version), Component: msg.Component, Timestamp: msg.TS}
			switch {
			case msg.Record != nil:
				m.Data = authority.AppendRecord(nil, msg.Record.record(t))
			case msg.Data != "":
				var err error
				if m.Data, err = hex.DecodeString(msg.Data); err != nil {
					t.Fatal(err)
				}
			}
			hm.avatarAfterAnswer = c.Waiting
			why, reason := win.admitCorrection(hm, &m, c.Relayed, c.Lacked)
			got := ""
			if reason != "" {
				got = why.String()
			}
			if got != c.Want {
				t.Errorf("%s (%s): %q (%s), want %q", c.Name, c.Why, got, reason, c.Want)
			}
		}
	})
}

// vectorGate returns the gate of host 1 over an empty world, at the vectors' start, and member 2
// as it first links.
func vectorGate(t *testing.T) (*gate, *hostMember) {
	w := newWorld(schema.MustTable(), crdt.Config{})
	w.self = 1
	b := roleBase{env: &vectorEnv{t: vectorStart}, w: w, cfg: &Config{}, log: zerolog.New(zerolog.NewTestWriter(t)), count: &counters{}}
	return &gate{roleBase: b}, &hostMember{link: &remote{idx: 2}, conduct: &conduct{}}
}

// releasedOf is transfers back to the host as the vectors write them: [entity, from].
func releasedOf(trs []authority.Transfer) [][2]uint64 {
	out := [][2]uint64{}
	for _, tr := range trs {
		out = append(out, [2]uint64{uint64(tr.Entity), uint64(tr.From)})
	}
	return out
}
