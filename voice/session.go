package voice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v4"

	"github.com/concordrtc/concord/signaling"
)

// session is one member's voice PeerConnection. The loop owns every field below pc except where
// noted; the goroutines a session starts post to the loop.
type session struct {
	id     string
	room   signaling.RoomID
	member signaling.Identity
	listen bool // listen-only (token claim voice "listen")
	pc     *webrtc.PeerConnection

	index    signaling.PeerIndex
	slots    []*slot
	speakers []signaling.Identity // slot i's speaker, "" when empty
	pub      *publisher           // set when its microphone track arrives
	dc       *webrtc.DataChannel
	rw       datachannel.ReadWriteCloser // set when the voice channel opens
	ended    bool
	muted    bool          // the client's last mute, kept for a microphone track that arrives later
	chanDone chan struct{} // closed when readChannel returns (the client closed the channel)
}

// open makes a session for member of room from offer: the PeerConnection, its answer, and the
// session registered with the loop (replacing the member's earlier one).
func (f *Forwarder) open(ctx context.Context, room signaling.RoomID, member signaling.Identity, idx signaling.PeerIndex,
	listen bool, offer string,
) (*session, string, error) {
	shape, err := parseOffer(offer)
	if err != nil {
		return nil, "", err
	}
	pc, err := f.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrServer, err)
	}
	s := &session{id: newSessionID(), room: room, member: member, index: idx, listen: listen, pc: pc, chanDone: make(chan struct{})}
	answer, err := f.negotiate(ctx, s, shape, offer)
	if err != nil {
		_ = pc.Close()
		return nil, "", err
	}
	res, ok := call(f, func() error { return f.add(s) })
	if !ok {
		res = ErrClosed
	}
	if res != nil {
		_ = pc.Close()
		return nil, "", res
	}
	return s, answer, nil
}

// negotiate answers the offer: the microphone section received (whatever the token says: a
// listen-only member's packets are dropped and counted), min(K, MaxSlots) slots sent, the rest
// inactive (docs/protocol.md §10).
func (f *Forwarder) negotiate(ctx context.Context, s *session, shape offerShape, offer string) (string, error) {
	pc := s.pc
	// Local transceivers are matched to the offer's sections in order of creation, by kind and
	// direction (pion's satisfyTypeAndDirection), so the microphone's comes first and is made
	// to match what the offer says of it.
	var micStub *webrtc.RTPTransceiver
	switch shape.micDir {
	case webrtc.RTPTransceiverDirectionSendrecv, webrtc.RTPTransceiverDirectionSendonly:
		if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			return "", fmt.Errorf("%w: %w", ErrServer, err)
		}
	case webrtc.RTPTransceiverDirectionRecvonly:
		// No microphone: a sendonly stub takes the section (not a slot's transceiver), stopped below.
		t, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrServer, err)
		}
		micStub = t
	default:
	}
	k := min(shape.slots, f.cfg.MaxSlots)
	ours := make(map[*webrtc.RTPTransceiver]*slot, k)
	trs := make([]*webrtc.RTPTransceiver, 0, k)
	for i := range k {
		track, err := webrtc.NewTrackLocalStaticRTP(opusCodec.RTPCodecCapability, "slot"+strconv.Itoa(i), "concord-voice")
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrServer, err)
		}
		t, err := pc.AddTransceiverFromTrack(track, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrServer, err)
		}
		sl := &slot{w: track}
		ours[t] = sl
		trs = append(trs, t)
		s.slots = append(s.slots, sl)
	}
	s.speakers = make([]signaling.Identity, k)
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	for _, t := range pc.GetTransceivers() {
		if _, slot := ours[t]; t == micStub || (!slot && t.Kind() == webrtc.RTPCodecTypeAudio && t.Direction() == webrtc.RTPTransceiverDirectionSendonly) {
			_ = t.Stop() // the slots beyond the bound, and the stub: answered inactive
		}
	}
	f.handlers(s)
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	ctx, cancel := context.WithTimeout(ctx, gatherTimeout)
	defer cancel()
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", fmt.Errorf("%w: ICE gathering: %w", ErrServer, ctx.Err())
	}
	for i, t := range trs {
		s.slots[i].mid = t.Mid()
		s.slots[i].levelID = audioLevelID(t.Sender().GetParameters().HeaderExtensions)
		f.drainRTCP(t.Sender())
	}
	return pc.LocalDescription().SDP, nil
}

// drainRTCP reads a sender's RTCP (listeners' NACKs and reports) so that the interceptors see it.
func (f *Forwarder) drainRTCP(snd *webrtc.RTPSender) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		buf := make([]byte, 1500)
		for {
			if _, _, err := snd.Read(buf); err != nil {
				return
			}
		}
	}()
}

// handlers hooks s's PeerConnection: its microphone track, its data channel, its state. Each
// posts to the loop.
func (f *Forwarder) handlers(s *session) {
	pc := s.pc
	pc.OnTrack(func(track *webrtc.TrackRemote, recv *webrtc.RTPReceiver) {
		if track.Kind() != webrtc.RTPCodecTypeAudio {
			return
		}
		p := newPublisher(s, audioLevelID(recv.GetParameters().HeaderExtensions), s.listen, f.cfg.MaxBitrate, f.cfg.Now())
		if !f.post(func() {
			if s.ended || s.pub != nil {
				return
			}
			s.pub = p
			p.muted.Store(s.muted)
			f.log.Debug().Str("room", string(s.room)).Str("member", string(s.member)).Bool("muted", s.muted).Bool("listen", s.listen).Msg("voice microphone track")
			if r := f.rooms[s.room]; r != nil {
				f.reselect(r)
			}
		}) {
			return
		}
		f.wg.Add(1)
		go f.readTrack(track, p)
	})
	pc.OnDataChannel(func(dc *webrtc.DataChannel) {
		if dc.Label() != "voice" {
			return
		}
		dc.OnOpen(func() {
			rw, err := dc.Detach()
			if err != nil {
				return
			}
			if !f.post(func() {
				if s.ended || s.rw != nil {
					_ = rw.Close()
					return
				}
				s.dc, s.rw = dc, rw
				f.sendSlots(s)
				f.wg.Add(1)
				go f.readChannel(s, rw)
			}) {
				_ = rw.Close()
			}
		})
	})
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		if st == webrtc.PeerConnectionStateFailed || st == webrtc.PeerConnectionStateClosed {
			f.post(func() { f.end(s, ByeLeft) })
		}
	})
}

// readTrack is a publisher's read goroutine: the per-packet hot path.
func (f *Forwarder) readTrack(track *webrtc.TrackRemote, p *publisher) {
	defer f.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, _, err := track.Read(buf)
		if err != nil {
			return
		}
		fwd, why, _ := p.handle(buf[:n], f.cfg.Now())
		if why != dropNone {
			f.c.dropped[why].Add(1)
			continue
		}
		if fwd > 0 {
			f.c.forwarded.Add(uint64(fwd))
			f.c.bytes.Add(uint64(fwd * n))
			if f.cfg.Flush != nil {
				f.cfg.Flush()
			}
		}
	}
}

// readChannel reads the client's messages on the voice channel.
func (f *Forwarder) readChannel(s *session, rw datachannel.ReadWriteCloser) {
	defer f.wg.Done()
	defer close(s.chanDone)
	buf := make([]byte, maxMessage+1)
	broken := false
	for {
		n, _, err := rw.ReadDataChannel(buf)
		if errors.Is(err, io.ErrShortBuffer) || (err == nil && n > maxMessage) {
			// The session ends (bye "protocol"); reading on lets the client's close after the
			// bye end this loop, which tells the closer the bye arrived.
			if !broken {
				broken = true
				f.post(func() { f.end(s, ByeProtocol) })
			}
			continue
		}
		if err != nil {
			return
		}
		if broken {
			continue
		}
		muted, err := parseClient(buf[:n])
		if err != nil {
			f.c.msgDrop.Add(1)
			continue
		}
		f.post(func() {
			s.muted = muted
			f.log.Debug().Str("room", string(s.room)).Str("member", string(s.member)).Bool("muted", muted).Bool("track", s.pub != nil).Msg("voice mute")
			if s.pub == nil || s.ended {
				return
			}
			if s.pub.muted.Swap(muted) != muted {
				if r := f.rooms[s.room]; r != nil {
					f.reselect(r)
				}
			}
		})
	}
}

// remove ends session id of room at the client's request (DELETE).
func (f *Forwarder) remove(room signaling.RoomID, id string) error {
	res, ok := call(f, func() error {
		s := f.byID[id]
		if s == nil || s.room != room {
			return ErrNoSession
		}
		f.end(s, ByeDeleted)
		return nil
	})
	if !ok {
		return ErrClosed
	}
	return res
}
