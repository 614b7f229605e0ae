package voice

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media/oggreader"
	"github.com/rs/zerolog"

	"github.com/concordrtc/concord/peer/link"
)

// DialConfig configures a Go voice client (Dial).
type DialConfig struct {
	// Server is the forwarder's base URL (the server's, "http://127.0.0.1:8080"). Required.
	Server string
	// Room and Member (the signaling identity, "user/device") the session is for. Required.
	Room, Member string
	// Token is the member's join token; empty on a server without a secret.
	Token string
	// Publish is an Ogg Opus stream, one packet per page (pion's oggwriter; ffmpeg
	// -page_duration 20000), sent at its own pace. Default nil: no microphone (listen only).
	Publish io.Reader
	// Loop starts Publish over at its end (it must then be an io.ReadSeeker). Default false.
	Loop bool
	// Stamp appends a trailer to each payload (the member id and the send time) so that
	// listeners can attribute packets and measure mouth-to-ear delay without trusting the slot
	// mapping's timing; not for audio a browser plays. Default false.
	Stamp bool
	// Level is the RFC 6464 level sent with every packet. Default 30 (speaking).
	Level uint8
	// Slots is the K of the offer. Default 8; negative: none (a publisher that hears nobody).
	Slots int
	// API is the pion API; default: loopback with a socket per connection, closed with the client.
	API *webrtc.API
	// ICEServers are the STUN/TURN servers the connection gathers with (the member's from
	// signaling, for a client behind a NAT). Default none: host candidates only.
	ICEServers []webrtc.ICEServer
	// HTTP client; default http.DefaultClient.
	HTTP *http.Client
	// Logger, default disabled.
	Logger zerolog.Logger
}

// SpeakerStats is what a client received of one speaker.
type SpeakerStats struct {
	Packets, Bytes int
	First, Last    time.Time
	// Arrivals are the receive times of the speaker's packets (the last 100000).
	Arrivals []time.Time
	// Delays are the mouth-to-ear delays of stamped packets (the last 100000).
	Delays []time.Duration
}

// SlotStats is what a client received on one slot (by mid).
type SlotStats struct {
	Packets int
	// SeqBreaks counts packets whose sequence number was not the previous one's plus one.
	SeqBreaks int
	LastSeq   uint16
	// Jitter is RFC 3550's interarrival jitter, in seconds.
	Jitter float64
	lastTS uint32
	lastAt time.Time
}

// Client is a Go member's voice session.
type Client struct {
	cfg      DialConfig
	pc       *webrtc.PeerConnection
	own      *link.API
	location string
	mic      *webrtc.TrackLocalStaticRTP
	rw       datachannel.ReadWriteCloser
	wg       sync.WaitGroup
	done     chan struct{}
	stop     context.CancelFunc
	closed   sync.Once

	mu       sync.Mutex // guards the following
	slots    map[string]string
	speakers map[string]*SpeakerStats
	perSlot  map[string]*SlotStats
	levels   map[string]uint8
	bye      string
	ready    bool // the first slots message arrived
	sent     int
	unknown  int
}

// ErrRefused wraps the forwarder's refusal of a session; the status is in the message and in
// RefusalError.
var ErrRefused = errors.New("voice: session refused")

// Dial opens a voice session.
func Dial(ctx context.Context, cfg DialConfig) (*Client, error) {
	switch {
	case cfg.Slots == 0:
		cfg.Slots = DefaultMaxSlots
	case cfg.Slots < 0:
		cfg.Slots = 0
	}
	if cfg.Level == 0 {
		cfg.Level = 30
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	c := &Client{cfg: cfg, done: make(chan struct{}), slots: map[string]string{}, speakers: map[string]*SpeakerStats{},
		perSlot: map[string]*SlotStats{}, levels: map[string]uint8{}}
	api := cfg.API
	if api == nil {
		own, err := link.NewAPI(link.Config{Logger: cfg.Logger, DisableUDPMux: true})
		if err != nil {
			return nil, err
		}
		if api, err = NewMediaAPI(own); err != nil {
			_ = own.Close()
			return nil, err
		}
		c.own = own
	}
	pc, err := api.NewPeerConnection(webrtc.Configuration{ICEServers: cfg.ICEServers})
	if err != nil {
		c.closeAPI()
		return nil, err
	}
	c.pc = pc
	if err := c.offerAndPost(ctx); err != nil {
		_ = pc.Close()
		c.closeAPI()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	if cfg.Publish != nil {
		c.wg.Add(1)
		go c.publish(rctx)
	}
	return c, nil
}

func (c *Client) closeAPI() {
	if c.own != nil {
		_ = c.own.Close()
	}
}

func (c *Client) offerAndPost(ctx context.Context) error {
	pc := c.pc
	if c.cfg.Publish != nil {
		track, err := webrtc.NewTrackLocalStaticRTP(opusCodec.RTPCodecCapability, "mic", "concord-voice")
		if err != nil {
			return err
		}
		if _, err := pc.AddTransceiverFromTrack(track, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendrecv}); err != nil {
			return err
		}
		c.mic = track
	} else if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
		return err
	}
	for range c.cfg.Slots {
		if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			return err
		}
	}
	ordered := true
	dc, err := pc.CreateDataChannel("voice", &webrtc.DataChannelInit{Ordered: &ordered})
	if err != nil {
		return err
	}
	dc.OnOpen(func() {
		rw, err := dc.Detach()
		if err != nil {
			return
		}
		c.mu.Lock()
		c.rw = rw
		c.mu.Unlock()
		c.wg.Add(1)
		go c.readChannel(rw)
	})
	pc.OnTrack(func(track *webrtc.TrackRemote, recv *webrtc.RTPReceiver) {
		mid := ""
		for _, t := range pc.GetTransceivers() {
			if t.Receiver() == recv {
				mid = t.Mid()
			}
		}
		c.wg.Add(1)
		go c.readTrack(mid, track)
	})
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		return err
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return ctx.Err()
	}
	u := strings.TrimRight(c.cfg.Server, "/") + "/voice/" + url.PathEscape(c.cfg.Room) + "?member=" + url.QueryEscape(c.cfg.Member)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(pc.LocalDescription().SDP))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/sdp")
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOffer))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return &RefusalError{Status: resp.StatusCode, Err: fmt.Errorf("%w: %d %s", ErrRefused, resp.StatusCode, strings.TrimSpace(string(body)))}
	}
	c.location = strings.TrimRight(c.cfg.Server, "/") + resp.Header.Get("Location")
	return pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: string(body)})
}

// stampMagic ends a stamped payload: ... member id, len(id) (1 byte), send time (unix ns, 8
// bytes big-endian), "CVOX".
const stampMagic = "CVOX"

func appendStamp(dst []byte, member string, at time.Time) []byte {
	dst = append(dst, member...)
	dst = append(dst, byte(len(member)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(at.UnixNano()))
	return append(dst, stampMagic...)
}

// parseStamp returns a stamped payload's member and send time.
func parseStamp(b []byte) (string, time.Time, bool) {
	if len(b) < 13 || string(b[len(b)-4:]) != stampMagic {
		return "", time.Time{}, false
	}
	ns := binary.BigEndian.Uint64(b[len(b)-12 : len(b)-4])
	n := int(b[len(b)-13])
	if len(b) < 13+n {
		return "", time.Time{}, false
	}
	return string(b[len(b)-13-n : len(b)-13]), time.Unix(0, int64(ns)), true
}

// publish sends the Ogg stream's packets at their pace.
func (c *Client) publish(ctx context.Context) {
	defer c.wg.Done()
	var levelID uint8
	for _, t := range c.pc.GetTransceivers() {
		if s := t.Sender(); s != nil && s.Track() == c.mic {
			levelID = audioLevelID(s.GetParameters().HeaderExtensions)
		}
	}
	var seq uint16
	var ts uint32
	next := time.Now()
	buf := make([]byte, 0, 1500)
	for {
		r, _, err := oggreader.NewWith(c.cfg.Publish)
		if err != nil {
			c.cfg.Logger.Warn().Err(err).Msg("voice: not an Ogg Opus stream")
			return
		}
		var granule uint64
		for {
			page, hdr, err := r.ParseNextPage()
			if err != nil {
				break
			}
			if bytes.HasPrefix(page, []byte("OpusTags")) || len(page) == 0 {
				granule = hdr.GranulePosition
				continue
			}
			samples := uint32(opusClock / 50)
			if d := hdr.GranulePosition - granule; hdr.GranulePosition > granule && d < opusClock {
				samples = uint32(d)
			}
			granule = hdr.GranulePosition
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
			now := time.Now()
			buf = append(buf[:0], page...)
			if c.cfg.Stamp {
				buf = appendStamp(buf, c.cfg.Member, now)
			}
			pkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: uint8(opusCodec.PayloadType), SequenceNumber: seq, Timestamp: ts}, Payload: buf}
			if levelID != 0 {
				_ = pkt.Header.SetExtension(levelID, []byte{c.cfg.Level & 0x7f})
			}
			if err := c.mic.WriteRTP(&pkt); err == nil {
				c.mu.Lock()
				c.sent++
				c.mu.Unlock()
			}
			seq++
			ts += samples
			next = next.Add(time.Duration(samples) * time.Second / opusClock)
		}
		rs, ok := c.cfg.Publish.(io.ReadSeeker)
		if !c.cfg.Loop || !ok {
			return
		}
		if _, err := rs.Seek(0, io.SeekStart); err != nil {
			return
		}
	}
}

// readTrack counts what arrives on one slot.
func (c *Client) readTrack(mid string, track *webrtc.TrackRemote) {
	defer c.wg.Done()
	buf := make([]byte, 1500)
	var pkt rtp.Packet
	for {
		n, _, err := track.Read(buf)
		if err != nil {
			return
		}
		now := time.Now()
		if pkt.Unmarshal(buf[:n]) != nil {
			continue
		}
		c.mu.Lock()
		who, sent, stamped := parseStamp(pkt.Payload)
		if !stamped {
			who = c.slots[mid]
		}
		if who == "" {
			c.unknown++
		} else {
			st := c.speakers[who]
			if st == nil {
				st = &SpeakerStats{First: now}
				c.speakers[who] = st
			}
			st.Packets++
			st.Bytes += n
			st.Last = now
			st.Arrivals = appendBounded(st.Arrivals, now)
			if stamped {
				st.Delays = appendBounded(st.Delays, now.Sub(sent))
			}
		}
		ss := c.perSlot[mid]
		if ss == nil {
			ss = &SlotStats{}
			c.perSlot[mid] = ss
		} else {
			if pkt.SequenceNumber != ss.LastSeq+1 {
				ss.SeqBreaks++
			}
			// RFC 3550 §6.4.1: D = (Rj−Ri) − (Sj−Si), J += (|D| − J)/16.
			d := now.Sub(ss.lastAt).Seconds() - float64(int32(pkt.Timestamp-ss.lastTS))/opusClock
			if d < 0 {
				d = -d
			}
			ss.Jitter += (d - ss.Jitter) / 16
		}
		ss.Packets++
		ss.LastSeq, ss.lastTS, ss.lastAt = pkt.SequenceNumber, pkt.Timestamp, now
		c.mu.Unlock()
	}
}

const maxKept = 100000

func appendBounded[T any](s []T, v T) []T {
	if len(s) >= maxKept {
		s = s[1:]
	}
	return append(s, v)
}

// readChannel applies the forwarder's messages.
func (c *Client) readChannel(rw datachannel.ReadWriteCloser) {
	defer c.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, _, err := rw.ReadDataChannel(buf)
		if err != nil {
			return
		}
		var m serverMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		c.mu.Lock()
		switch m.T {
		case msgSlots:
			c.ready = true
			for mid, who := range m.Slots {
				if who == nil {
					delete(c.slots, mid)
				} else {
					c.slots[mid] = *who
				}
			}
		case msgLevels:
			for who, v := range m.Levels {
				c.levels[who] = v
			}
		case msgBye:
			c.bye = m.Reason
		}
		c.mu.Unlock()
		if m.T == msgBye {
			_ = rw.Close() // the forwarder closes the connection once the channel is closed
			return
		}
	}
}

// SetMuted tells the forwarder to stop (start) forwarding this member.
func (c *Client) SetMuted(muted bool) error {
	c.mu.Lock()
	rw := c.rw
	c.mu.Unlock()
	if rw == nil {
		return fmt.Errorf("%w: the voice channel is not open", ErrSessionEnded)
	}
	b, _ := json.Marshal(clientMsg{T: msgMute, Muted: &muted})
	_, err := rw.WriteDataChannel(b, true)
	return err
}

// Speakers returns a copy of what the client received per speaker.
func (c *Client) Speakers() map[string]SpeakerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]SpeakerStats, len(c.speakers))
	for k, v := range c.speakers {
		cp := *v
		cp.Arrivals = append([]time.Time(nil), v.Arrivals...)
		cp.Delays = append([]time.Duration(nil), v.Delays...)
		out[k] = cp
	}
	return out
}

// SlotStats returns a copy of what the client received per slot (by mid).
func (c *Client) SlotStats() map[string]SlotStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]SlotStats, len(c.perSlot))
	for k, v := range c.perSlot {
		out[k] = *v
	}
	return out
}

// Slots returns the current slot mapping (mid → member).
func (c *Client) Slots() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.slots))
	for k, v := range c.slots {
		out[k] = v
	}
	return out
}

// Levels returns the last level of each member the forwarder reported.
func (c *Client) Levels() map[string]uint8 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]uint8, len(c.levels))
	for k, v := range c.levels {
		out[k] = v
	}
	return out
}

// Sent is the number of packets published.
func (c *Client) Sent() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// Ready reports whether the session's voice channel is open and the forwarder has sent its
// first slot mapping.
func (c *Client) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// Bye is the reason of the forwarder's bye, "" before one.
func (c *Client) Bye() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bye
}

// Close ends the session (DELETE, then the PeerConnection) and waits for the client's goroutines.
func (c *Client) Close() error {
	c.closed.Do(func() {
		c.stop()
		if c.location != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.location, nil); err == nil {
				if resp, err := c.cfg.HTTP.Do(req); err == nil {
					_ = resp.Body.Close()
				}
			}
			cancel()
		}
		c.mu.Lock()
		rw := c.rw
		c.mu.Unlock()
		if rw != nil {
			_ = rw.Close()
		}
		_ = c.pc.Close()
		c.wg.Wait()
		c.closeAPI()
		close(c.done)
	})
	return nil
}
