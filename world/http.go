package world

import (
	"crypto/hmac"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/concordrtc/concord/signaling"
)

// Directory is the JSON of GET /api/worlds/{W} (docs/protocol.md §11).
type Directory struct {
	World      string        `json:"world"`
	Cols       int           `json:"cols"`
	Rows       int           `json:"rows"`
	RegionSize int32         `json:"regionSize"`
	View       int           `json:"view"`
	Regions    []RegionEntry `json:"regions"`
}

// RegionEntry is one region of a Directory.
type RegionEntry struct {
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Room   string `json:"room"`
	Node   string `json:"node"`
	Loaded bool   `json:"loaded"`
}

// Directory returns the world's directory as this process knows it.
func (s *Server) Directory() Directory {
	d := Directory{World: s.def.Name, Cols: s.def.Cols, Rows: s.def.Rows, RegionSize: s.def.RegionSize, View: s.def.View}
	s.mu.Lock()
	defer s.mu.Unlock()
	for y := range s.def.Rows {
		for x := range s.def.Cols {
			room := RoomName(s.def.Name, x, y)
			e := RegionEntry{X: x, Y: y, Room: string(room)}
			if s.regions[room].state == loaded {
				e.Loaded, e.Node = true, s.cfg.Node
			}
			d.Regions = append(d.Regions, e)
		}
	}
	return d
}

func (s *Server) entry(r Region) RegionEntry {
	d := s.Directory()
	e := d.Regions[r.Y*s.def.Cols+r.X]
	if !e.Loaded && s.cl != nil {
		// Loaded by another node (Load returned): the directory names the node placement picked.
		if node, err := s.cl.cfg.Owner(s.ctx, r); err == nil {
			e.Loaded, e.Node = true, node
		}
	}
	return e
}

// Handler serves /api/worlds/{W} and /api/worlds/{W}/load for this Server's world (404 for
// another world).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/api/worlds/")
		name, action, _ := strings.Cut(rest, "/")
		if !ok || name != s.def.Name || (action != "" && action != "load") {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such world"})
			return
		}
		if action == "" {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
				return
			}
			writeJSON(w, http.StatusOK, s.Directory())
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
			return
		}
		if code, why := s.mayLoad(r); code != 0 {
			s.count("load", "unauthorized")
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="concord"`)
			}
			writeJSON(w, code, map[string]string{"error": why})
			return
		}
		x, errX := strconv.Atoi(r.URL.Query().Get("x"))
		y, errY := strconv.Atoi(r.URL.Query().Get("y"))
		if errX != nil || errY != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such region"})
			return
		}
		reg, err := s.Load(r.Context(), x, y)
		switch {
		case errors.Is(err, ErrUnknownRegion):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such region"})
		case err != nil:
			s.count("load", "failed")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		default:
			writeJSON(w, http.StatusOK, s.entry(reg))
		}
	})
}

// maxBearer bounds the credential mayLoad parses (a join token is far shorter).
const maxBearer = 4096

// mayLoad decides whether r may load a region: on a server with a secret, a load starts a region
// host and keeps it a grace period, so it takes what joining the region's room takes (a join
// token, of any of this world's region rooms: a player resident in one loads its neighbours to
// watch them) or the admin key. It returns 0, or the HTTP status and why: 401 without a
// credential, 403 with another. A cluster's nodes load regions for each other over NATS, not
// here (cluster.go, §7's authentication).
func (s *Server) mayLoad(r *http.Request) (int, string) {
	if len(s.cfg.Secret) == 0 {
		return 0, ""
	}
	b, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || b == "" || len(b) > maxBearer {
		return http.StatusUnauthorized, string(signaling.CodeTokenRequired) + ": this server has a secret: send a join token of one of the world's region rooms or the admin key as \"Authorization: Bearer ...\""
	}
	if s.cfg.AdminKey != "" && hmac.Equal([]byte(b), []byte(s.cfg.AdminKey)) {
		return 0, ""
	}
	c, err := signaling.ParseToken(s.cfg.Secret, b, s.now())
	if err != nil {
		return http.StatusForbidden, string(signaling.CodeForbidden) + ": " + err.Error()
	}
	if w, _, _, ok := ParseRoom(c.Room); !ok || w != s.def.Name {
		return http.StatusForbidden, string(signaling.CodeForbidden) + ": the token is for room " + strconv.Quote(string(c.Room)) + ", not a region of world " + strconv.Quote(s.def.Name)
	}
	return 0, ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
