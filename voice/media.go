package voice

import (
	"fmt"

	"github.com/pion/interceptor"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/concordrtc/concord/peer/link"
)

// opusCodec is the one codec voice carries.
var opusCodec = webrtc.RTPCodecParameters{
	RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: opusClock, Channels: 2,
		SDPFmtpLine: "minptime=10;useinbandfec=1"},
	PayloadType: 111,
}

// newMedia is Opus with the RFC 6464 audio level, and the interceptors a forwarder needs: NACK
// (answer a listener's NACKs from a send buffer, send NACKs to a speaker) and RTCP reports.
func newMedia() (*webrtc.MediaEngine, *interceptor.Registry, error) {
	m := &webrtc.MediaEngine{}
	if err := m.RegisterCodec(opusCodec, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, nil, fmt.Errorf("voice: opus: %w", err)
	}
	if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: sdp.AudioLevelURI}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, nil, fmt.Errorf("voice: audio level: %w", err)
	}
	ir := &interceptor.Registry{}
	if err := webrtc.ConfigureNack(m, ir); err != nil {
		return nil, nil, fmt.Errorf("voice: nack: %w", err)
	}
	if err := webrtc.ConfigureRTCPReports(ir); err != nil {
		return nil, nil, fmt.Errorf("voice: rtcp reports: %w", err)
	}
	return m, ir, nil
}

// NewMediaAPI returns the pion API for voice over a's network settings (its socket, its candidate
// filters): Opus, the audio-level extension, NACK and RTCP reports.
func NewMediaAPI(a *link.API) (*webrtc.API, error) {
	m, ir, err := newMedia()
	if err != nil {
		return nil, err
	}
	return a.MediaAPI(m, ir), nil
}

// audioLevelID returns the negotiated id of the audio-level extension, 0 when none.
func audioLevelID(exts []webrtc.RTPHeaderExtensionParameter) uint8 {
	for _, e := range exts {
		if e.URI == sdp.AudioLevelURI && e.ID > 0 && e.ID < 15 {
			return uint8(e.ID)
		}
	}
	return 0
}

// offerShape is what the forwarder needs of an offer (docs/protocol.md §10): its audio sections in
// order (the first is the member's microphone, the others its slots) and whether it has the
// data channel's section.
type offerShape struct {
	micDir webrtc.RTPTransceiverDirection
	slots  int
}

// parseOffer checks an offer's shape. It never panics on input (FuzzParseOffer).
func parseOffer(offer string) (offerShape, error) {
	var d sdp.SessionDescription
	if err := d.UnmarshalString(offer); err != nil {
		return offerShape{}, fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	var sh offerShape
	audio, app := 0, false
	for _, m := range d.MediaDescriptions {
		switch m.MediaName.Media {
		case "audio":
			if audio == 0 {
				sh.micDir = direction(m)
			} else {
				if dir := direction(m); dir != webrtc.RTPTransceiverDirectionRecvonly {
					return offerShape{}, fmt.Errorf("%w: slot section %d is %s, not recvonly", ErrBadOffer, audio, dir)
				}
				sh.slots++
			}
			audio++
		case "application":
			app = true
		default:
			return offerShape{}, fmt.Errorf("%w: a %q section", ErrBadOffer, m.MediaName.Media)
		}
	}
	if audio == 0 || !app {
		return offerShape{}, fmt.Errorf("%w: needs an audio section and the data channel's", ErrBadOffer)
	}
	return sh, nil
}

// direction is a media section's direction attribute (sendrecv when absent, RFC 8866 §6.7).
func direction(m *sdp.MediaDescription) webrtc.RTPTransceiverDirection {
	for _, a := range m.Attributes {
		switch a.Key {
		case "sendrecv", "sendonly", "recvonly", "inactive":
			return webrtc.NewRTPTransceiverDirection(a.Key)
		}
	}
	return webrtc.RTPTransceiverDirectionSendrecv
}
