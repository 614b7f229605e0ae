package netmsg

import "io"

// Message is one message of a payload, as returned by Reader.Next. Raw and
// Body alias the payload and are valid until it is reused.
type Message struct {
	// Type is the message type.
	Type Type
	// Raw is the whole message, type byte included: pass it to the
	// matching ConsumeX.
	Raw []byte
	// Body is the frame body of a type from 6 up (what an application
	// handler receives), or Raw[1:] for a TRNP message.
	Body []byte
}

// Reader walks the messages packed back to back in one data-channel
// payload. It validates each message completely before returning it, so
// the matching ConsumeX on Message.Raw cannot fail. It allocates nothing on
// success. The zero value holds an empty payload.
//
//	r := netmsg.NewReader(payload)
//	for r.More() {
//		m, err := r.Next()
//		if err != nil {
//			var pe *netmsg.ProtocolError
//			if errors.As(err, &pe) {
//				return pe // close the peer
//			}
//			dropped++ // ErrUnknownType: skip it
//			continue
//		}
//		switch m.Type { … }
//	}
type Reader struct {
	b   []byte
	off int
	err error // sticky *ProtocolError
}

// NewReader returns a Reader over payload.
func NewReader(payload []byte) Reader {
	return Reader{b: payload}
}

// Reset makes r read payload from the start.
func (r *Reader) Reset(payload []byte) {
	*r = Reader{b: payload}
}

// More reports whether Next has another message or error to return.
func (r *Reader) More() bool {
	return r.err == nil && r.off < len(r.b)
}

// Offset returns the payload offset of the next message.
func (r *Reader) Offset() int { return r.off }

// Next returns the next message. At the end of the payload it returns
// io.EOF. A malformed message is a *ProtocolError (offsets relative to the
// payload) and ends the walk: every later call returns it again. An
// extension type this build does not define (6–127, see Type.Known) is
// returned with ErrUnknownType, a drop-message error; the walk continues
// after it. Application messages (128–255) are returned without error.
// Stamp and Digest are checked by their frame only (ConsumeStamp and
// ConsumeDigest check their bodies).
func (r *Reader) Next() (Message, error) {
	if r.err != nil {
		return Message{}, r.err
	}
	if r.off >= len(r.b) {
		return Message{}, io.EOF
	}
	rest := r.b[r.off:]
	t := Type(rest[0])
	n, err := messageLen(rest)
	if err != nil {
		if pe, ok := err.(*ProtocolError); ok && pe.Offset >= 0 {
			pe.Offset += r.off // the error is freshly made: rebase it
		}
		r.err = err
		return Message{}, err
	}
	raw := rest[:n:n]
	m := Message{Type: t, Raw: raw, Body: raw[1:]}
	if t.IsFramed() {
		m.Body = raw[extHeaderSize:]
	}
	r.off += n
	if t.IsExtension() && !t.Known() {
		return m, ErrUnknownType
	}
	return m, nil
}

// messageLen validates the message at the start of b and returns its
// length: completely for the types netmsg decodes, by frame for the others.
// Every error is a *ProtocolError.
func messageLen(b []byte) (int, error) {
	switch t := Type(b[0]); t {
	case TypeHostSnapshot:
		return ConsumeHostSnapshot(b, nil)
	case TypePeerEntered:
		return ConsumePeerEntered(b, nil)
	case TypePeerExited:
		return ConsumePeerExited(b, nil)
	case TypeHostCommands:
		return ConsumeHostCommands(b, nil)
	case TypePeerCommands:
		return ConsumePeerCommands(b, nil)
	case TypeEntityUpdates:
		return ConsumeEntityUpdates(b, nil)
	case TypeFragment:
		return ConsumeFragment(b, nil)
	case TypeCrdtBatch:
		return ConsumeCrdtBatch(b, nil)
	case TypePing:
		return ConsumePing(b, nil)
	case TypePong:
		return ConsumePong(b, nil)
	case TypeClose:
		return ConsumeClose(b, nil)
	case TypeHello:
		return ConsumeHello(b, nil)
	case TypeRelay:
		return ConsumeRelay(b, nil)
	case TypeActions:
		return ConsumeActions(b, nil)
	case TypeForget:
		return ConsumeForget(b, nil)
	case TypePackedUpdates:
		return ConsumePackedUpdates(b, nil)
	case TypeDeltaUpdates:
		return ConsumeDeltaUpdates(b, nil)
	case TypeAck:
		return ConsumeAck(b, nil)
	case TypeRunUpdates:
		return ConsumeRunUpdates(b, nil)
	case TypeStamp, TypeDigest: // bodies checked by ConsumeStamp, ConsumeDigest
		return frameLen(b)
	default:
		return frameLen(b)
	}
}

func frameLen(b []byte) (int, error) {
	_, _, n, err := ConsumeExt(b)
	return n, err
}
