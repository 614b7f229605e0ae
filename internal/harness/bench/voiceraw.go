package bench

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
)

// rawVoice is the floor `bench voice` compares the forwarder with: a pion track relay with no
// Concord logic (no tokens, slots, selection, rewrite, bounds or levels). Publisher i's packets
// are written to one TrackLocalStaticRTP, which every listener's slot i is bound to (pion's
// broadcast pattern: the track writes to each binding, setting its SSRC and payload type). It
// speaks the same POST /voice/{room}?member= offer/answer as the forwarder, so the same clients
// measure both. Members are "pub-I" and "lis-J".
type rawVoice struct {
	api    *webrtc.API
	tracks []*webrtc.TrackLocalStaticRTP
	mu     sync.Mutex // guards pcs
	pcs    []*webrtc.PeerConnection
	wg     sync.WaitGroup
}

func newRawVoice(api *webrtc.API, publishers int) (*rawVoice, error) {
	r := &rawVoice{api: api}
	for i := range publishers {
		t, err := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2},
			"pub"+strconv.Itoa(i), "raw")
		if err != nil {
			return nil, err
		}
		r.tracks = append(r.tracks, t)
	}
	return r, nil
}

func (r *rawVoice) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	member := req.URL.Query().Get("member")
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	answer, err := r.answer(member, string(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Location", req.URL.Path+"/raw")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answer)
}

func (r *rawVoice) answer(member, offer string) (string, error) {
	pc, err := r.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.pcs = append(r.pcs, pc)
	r.mu.Unlock()
	pub := -1
	if s, ok := strings.CutPrefix(member, "pub-"); ok {
		if pub, err = strconv.Atoi(s); err != nil || pub < 0 || pub >= len(r.tracks) {
			return "", fmt.Errorf("bench: member %q", member)
		}
	}
	var stub *webrtc.RTPTransceiver
	if pub >= 0 {
		_, err = pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly})
	} else {
		stub, err = pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
	}
	if err != nil {
		return "", err
	}
	if pub < 0 {
		for _, t := range r.tracks {
			tr, err := pc.AddTransceiverFromTrack(t, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
			if err != nil {
				return "", err
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				buf := make([]byte, 1500)
				for {
					if _, _, err := tr.Sender().Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}
	pc.OnTrack(func(track *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		if pub < 0 {
			return
		}
		out := r.tracks[pub]
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			buf := make([]byte, 1500)
			var pkt rtp.Packet
			for {
				n, _, err := track.Read(buf)
				if err != nil {
					return
				}
				if pkt.Unmarshal(buf[:n]) != nil {
					continue
				}
				_ = out.WriteRTP(&pkt)
			}
		}()
	})
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return "", err
	}
	if stub != nil {
		_ = stub.Stop()
	}
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return "", err
	}
	<-gathered
	return pc.LocalDescription().SDP, nil
}

func (r *rawVoice) Close() {
	r.mu.Lock()
	pcs := r.pcs
	r.pcs = nil
	r.mu.Unlock()
	for _, pc := range pcs {
		_ = pc.Close()
	}
	r.wg.Wait()
}
