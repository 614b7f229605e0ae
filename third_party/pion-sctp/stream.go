// SPDX-FileCopyrightText: 2026 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/logging"
	"github.com/pion/transport/v5/deadline"
)

const (
	// ReliabilityTypeReliable is used for reliable transmission.
	ReliabilityTypeReliable byte = 0
	// ReliabilityTypeRexmit is used for partial reliability by retransmission count.
	ReliabilityTypeRexmit byte = 1
	// ReliabilityTypeTimed is used for partial reliability by retransmission duration.
	ReliabilityTypeTimed byte = 2
)

// StreamState is an enum for SCTP Stream state field
// This field identifies the state of stream.
type StreamState int

// StreamState enums.
const (
	StreamStateOpen    StreamState = iota // Stream object starts with StreamStateOpen
	StreamStateClosing                    // Outgoing stream is being reset
	StreamStateClosed                     // Stream has been closed
)

func (ss StreamState) String() string {
	switch ss {
	case StreamStateOpen:
		return "open"
	case StreamStateClosing:
		return "closing"
	case StreamStateClosed:
		return "closed"
	}

	return "unknown"
}

// SCTP stream errors.
var (
	ErrOutboundPacketTooLarge = errors.New("outbound packet larger than maximum message size")
	ErrStreamClosed           = errors.New("stream closed")
	ErrReadDeadlineExceeded   = fmt.Errorf("read deadline exceeded: %w", os.ErrDeadlineExceeded)
)

// Stream represents an SCTP stream.
type Stream struct {
	associationGeneration uint64

	association         *Association
	lock                sync.RWMutex
	streamIdentifier    uint16
	defaultPayloadType  PayloadProtocolIdentifier
	reassemblyQueue     *reassemblyQueue
	sequenceNumber      uint16
	nextOrderedMID      uint32
	nextUnorderedMID    uint32
	readNotifier        *sync.Cond
	readErr             error
	readTimeoutCancel   chan struct{}
	writeDeadline       *deadline.Deadline
	writeLock           sync.Mutex
	unordered           bool
	reliabilityType     byte
	reliabilityValue    uint32
	bufferedAmount      uint64
	bufferedAmountLow   uint64
	onBufferedAmountLow func()
	state               StreamState
	log                 logging.LeveledLogger
	name                string
}

// StreamIdentifier returns the Stream identifier associated to the stream.
func (s *Stream) StreamIdentifier() uint16 {
	s.lock.RLock()
	defer s.lock.RUnlock()

	return s.streamIdentifier
}

// SetDefaultPayloadType sets the default payload type used by Write.
func (s *Stream) SetDefaultPayloadType(defaultPayloadType PayloadProtocolIdentifier) {
	atomic.StoreUint32((*uint32)(&s.defaultPayloadType), uint32(defaultPayloadType))
}

// SetReliabilityParams sets reliability parameters for this stream.
func (s *Stream) SetReliabilityParams(unordered bool, relType byte, relVal uint32) {
	s.lock.Lock()
	defer s.lock.Unlock()

	s.setReliabilityParams(unordered, relType, relVal)
}

// setReliabilityParams sets reliability parameters for this stream.
// The caller should hold the lock.
func (s *Stream) setReliabilityParams(unordered bool, relType byte, relVal uint32) {
	s.log.Debugf("[%s] reliability params: ordered=%v type=%d value=%d",
		s.name, !unordered, relType, relVal)
	s.unordered = unordered
	s.reliabilityType = relType
	s.reliabilityValue = relVal
}

// Read reads a packet of len(p) bytes, dropping the Payload Protocol Identifier.
// Returns EOF when the stream is reset or an error if the stream is closed
// otherwise.
func (s *Stream) Read(p []byte) (int, error) {
	n, _, err := s.ReadSCTP(p)

	return n, err
}

// ReadSCTP reads a packet of len(payload) bytes and returns the associated Payload
// Protocol Identifier.
// Returns EOF when the stream is reset or an error if the stream is closed
// otherwise.
func (s *Stream) ReadSCTP(payload []byte) (int, PayloadProtocolIdentifier, error) {
	s.lock.Lock()
	defer s.lock.Unlock()

	defer func() {
		// close readTimeoutCancel if the current read timeout routine is no longer effective
		if s.readTimeoutCancel != nil && s.readErr != nil {
			close(s.readTimeoutCancel)
			s.readTimeoutCancel = nil
		}
	}()

	for {
		n, ppi, err := s.reassemblyQueue.read(payload)
		if err == nil || errors.Is(err, io.ErrShortBuffer) {
			return n, ppi, err
		}

		if s.readErr != nil {
			return 0, PayloadProtocolIdentifier(0), s.readErr
		}

		s.readNotifier.Wait()
	}
}

// SetReadDeadline sets the read deadline in an identical way to net.Conn.
func (s *Stream) SetReadDeadline(deadline time.Time) error {
	s.lock.Lock()
	defer s.lock.Unlock()

	if s.readTimeoutCancel != nil {
		close(s.readTimeoutCancel)
		s.readTimeoutCancel = nil
	}

	if s.readErr != nil {
		if !errors.Is(s.readErr, ErrReadDeadlineExceeded) {
			return nil
		}
		s.readErr = nil
	}

	if !deadline.IsZero() {
		s.readTimeoutCancel = make(chan struct{})

		go func(readTimeoutCancel chan struct{}) {
			t := time.NewTimer(time.Until(deadline))
			select {
			case <-readTimeoutCancel:
				t.Stop()

				return
			case <-t.C:
				select {
				case <-readTimeoutCancel:
					return
				default:
				}
				s.lock.Lock()
				if s.readErr == nil {
					s.readErr = ErrReadDeadlineExceeded
				}
				s.readTimeoutCancel = nil
				s.lock.Unlock()

				s.readNotifier.Signal()
			}
		}(s.readTimeoutCancel)
	}

	return nil
}

func (s *Stream) handleData(pd *chunkPayloadData) error {
	s.lock.Lock()
	defer s.lock.Unlock()

	var readable bool
	complete, err := s.reassemblyQueue.pushWithError(pd)
	if err != nil {
		return err
	}
	if complete {
		readable = s.reassemblyQueue.isReadable()
		s.log.Debugf("[%s] reassemblyQueue readable=%v", s.name, readable)
		if readable {
			s.log.Debugf("[%s] readNotifier.signal()", s.name)
			s.readNotifier.Signal()
			s.log.Debugf("[%s] readNotifier.signal() done", s.name)
		}
	}

	return nil
}

func (s *Stream) handleForwardTSNForOrdered(ssn uint16) {
	var readable bool

	func() {
		s.lock.Lock()
		defer s.lock.Unlock()

		if s.unordered {
			return // unordered chunks are handled by handleForwardUnordered method
		}

		// Remove all chunks older than or equal to the new TSN from
		// the reassemblyQueue.
		s.reassemblyQueue.forwardTSNForOrdered(ssn)
		readable = s.reassemblyQueue.isReadable()
	}()

	// Notify the reader asynchronously if there's a data chunk to read.
	if readable {
		s.readNotifier.Signal()
	}
}

func (s *Stream) handleForwardTSNForUnordered(newCumulativeTSN uint32) {
	var readable bool

	func() {
		s.lock.Lock()
		defer s.lock.Unlock()

		if !s.unordered {
			return // ordered chunks are handled by handleForwardTSNOrdered method
		}

		// Remove all chunks older than or equal to the new TSN from
		// the reassemblyQueue.
		s.reassemblyQueue.forwardTSNForUnordered(newCumulativeTSN)
		readable = s.reassemblyQueue.isReadable()
	}()

	// Notify the reader asynchronously if there's a data chunk to read.
	if readable {
		s.readNotifier.Signal()
	}
}

func (s *Stream) handleForwardTSNForOrderedMID(mid uint32) {
	var readable bool

	func() {
		s.lock.Lock()
		defer s.lock.Unlock()

		s.reassemblyQueue.forwardTSNForOrderedMID(mid)
		readable = s.reassemblyQueue.isReadable()
	}()

	if readable {
		s.readNotifier.Signal()
	}
}

func (s *Stream) handleForwardTSNForUnorderedMID(mid uint32) {
	var readable bool

	func() {
		s.lock.Lock()
		defer s.lock.Unlock()

		s.reassemblyQueue.forwardTSNForUnorderedMID(mid)
		readable = s.reassemblyQueue.isReadable()
	}()

	if readable {
		s.readNotifier.Signal()
	}
}

// Write writes len(payload) bytes from payload with the default Payload Protocol Identifier.
func (s *Stream) Write(payload []byte) (n int, err error) {
	ppi := PayloadProtocolIdentifier(atomic.LoadUint32((*uint32)(&s.defaultPayloadType)))

	return s.WriteSCTP(payload, ppi)
}

// WriteSCTP writes len(payload) bytes from payload to the DTLS connection.
func (s *Stream) WriteSCTP(payload []byte, ppi PayloadProtocolIdentifier) (int, error) {
	return s.writeSCTP(payload, ppi, false)
}

// WriteSCTPOwned is WriteSCTP for a caller that hands payload over: it must never modify
// payload again (not even after an error). The chunks keep references to it (sub-slices when
// the message is fragmented) until they are acknowledged or abandoned, instead of a copy each;
// the association only ever reads user data. CONCORD-PATCH: a host sends the same datagram to
// many associations, and the copies were a third of what it allocated.
func (s *Stream) WriteSCTPOwned(payload []byte, ppi PayloadProtocolIdentifier) (int, error) {
	return s.writeSCTP(payload, ppi, true)
}

// SetAckCoalescing calls Association.SetAckCoalescing on the stream's association.
// CONCORD-PATCH: a detached data channel reaches its stream, not its association.
func (s *Stream) SetAckCoalescing(window time.Duration) {
	s.association.SetAckCoalescing(window)
}

// WriteSCTPOwnedBatch is WriteSCTPOwned for several messages, in order, with one acquisition of
// the stream's and the association's locks and one wake of the write loop instead of one per
// message. On an error none of them is sent. CONCORD-PATCH: a host sends each member a burst of
// datagrams every network interval.
func (s *Stream) WriteSCTPOwnedBatch(payloads [][]byte, ppi PayloadProtocolIdentifier) error {
	maxMessageSize := s.association.MaxMessageSize()
	for _, p := range payloads {
		if len(p) > int(maxMessageSize) {
			return fmt.Errorf("%w: %v", ErrOutboundPacketTooLarge, maxMessageSize)
		}
	}
	if s.State() != StreamStateOpen {
		return ErrStreamClosed
	}
	if len(payloads) == 0 {
		return nil
	}
	if s.association.isBlockWrite() {
		// Blocking writes keep their message-at-a-time path and its write lock.
		for _, p := range payloads {
			if _, err := s.writeSCTP(p, ppi, true); err != nil {
				return err
			}
		}

		return nil
	}
	var endsBuf [64]int
	chunks, ends, unordered := s.packetizeOwnedBatch(payloads, ppi, endsBuf[:0])
	if err := s.association.sendPayloadData(s.writeDeadline.Context(), chunks); err != nil {
		for i := len(payloads) - 1; i >= 0; i-- {
			start := 0
			if i > 0 {
				start = ends[i-1]
			}
			s.rollbackWrite(chunks[start:ends[i]], unordered, uint64(len(payloads[i])))
		}

		return err
	}

	return nil
}

func (s *Stream) writeSCTP(payload []byte, ppi PayloadProtocolIdentifier, owned bool) (int, error) { // CONCORD-PATCH: owned
	maxMessageSize := s.association.MaxMessageSize()
	if len(payload) > int(maxMessageSize) {
		return 0, fmt.Errorf("%w: %v", ErrOutboundPacketTooLarge, maxMessageSize)
	}

	if s.State() != StreamStateOpen {
		return 0, ErrStreamClosed
	}

	// the send could fail if the association is blocked for writing (timeout), it will left a hole
	// in the stream sequence number space, so we need to lock the write to avoid concurrent send and decrement
	// the sequence number in case of failure
	if s.association.isBlockWrite() {
		s.writeLock.Lock()
	}
	chunks, unordered := s.packetizeOwned(payload, ppi, owned) // CONCORD-PATCH: owned
	n := len(payload)
	err := s.association.sendPayloadData(s.writeDeadline.Context(), chunks)
	if err != nil {
		s.rollbackWrite(chunks, unordered, uint64(len(payload)))
		n = 0
	}
	if s.association.isBlockWrite() {
		s.writeLock.Unlock()
	}

	return n, err
}

// rollbackWrite only undoes counters if the write still belongs to this association generation.
func (s *Stream) rollbackWrite(chunks []*chunkPayloadData, unordered bool, size uint64) {
	s.lock.Lock()
	defer s.lock.Unlock()

	// The restart discarded this write and reset the counters.
	if len(chunks) > 0 && chunks[0].associationGeneration != s.associationGeneration {
		return
	}
	s.bufferedAmount -= size
	if len(chunks) > 0 && chunks[0].isIData() {
		if unordered {
			s.nextUnorderedMID--
		} else {
			s.nextOrderedMID--
		}
	} else if !unordered {
		s.sequenceNumber--
	}
}

// SetWriteDeadline sets the write deadline in an identical way to net.Conn,
// it will only work for blocking writes.
func (s *Stream) SetWriteDeadline(deadline time.Time) error {
	s.writeDeadline.Set(deadline)

	return nil
}

// SetDeadline sets the read and write deadlines in an identical way to net.Conn.
func (s *Stream) SetDeadline(t time.Time) error {
	if err := s.SetReadDeadline(t); err != nil {
		return err
	}

	return s.SetWriteDeadline(t)
}

func (s *Stream) packetize(raw []byte, ppi PayloadProtocolIdentifier) ([]*chunkPayloadData, bool) {
	return s.packetizeOwned(raw, ppi, false) // CONCORD-PATCH
}

// packetizeOwned is packetize; with owned the chunks reference raw instead of copying it. CONCORD-PATCH.
func (s *Stream) packetizeOwned(raw []byte, ppi PayloadProtocolIdentifier, owned bool) ([]*chunkPayloadData, bool) {
	s.association.lock.RLock()
	useInterleaving, maxPayloadSize := s.association.useInterleaving, s.association.maxPayloadSize
	s.lock.Lock()
	s.association.lock.RUnlock()
	defer s.lock.Unlock()

	return s.packetizeLocked(nil, raw, ppi, owned, useInterleaving, maxPayloadSize)
}

// CONCORD-PATCH: packetizeOwnedBatch is packetizeOwned for several messages, in order, under one
// acquisition of the locks: all their chunks, and where each message's chunks end.
func (s *Stream) packetizeOwnedBatch(raws [][]byte, ppi PayloadProtocolIdentifier, ends []int) ([]*chunkPayloadData, []int, bool) {
	s.association.lock.RLock()
	useInterleaving, maxPayloadSize := s.association.useInterleaving, s.association.maxPayloadSize
	s.lock.Lock()
	s.association.lock.RUnlock()
	defer s.lock.Unlock()

	chunks := make([]*chunkPayloadData, 0, len(raws))
	unordered := false
	for _, raw := range raws {
		chunks, unordered = s.packetizeLocked(chunks, raw, ppi, true, useInterleaving, maxPayloadSize)
		ends = append(ends, len(chunks))
	}

	return chunks, ends, unordered
}

// packetizeLocked appends raw's chunks to chunks; the caller holds s.lock. CONCORD-PATCH: the
// body of upstream's packetize.
func (s *Stream) packetizeLocked(
	chunks []*chunkPayloadData, raw []byte, ppi PayloadProtocolIdentifier, owned, useInterleaving bool, maxPayloadSize uint32,
) ([]*chunkPayloadData, bool) {
	offset := uint32(0)
	remaining := uint32(len(raw)) //nolint:gosec // G115

	// From draft-ietf-rtcweb-data-protocol-09, section 6:
	//   All Data Channel Establishment Protocol messages MUST be sent using
	//   ordered delivery and reliable transmission.
	unordered := ppi != PayloadTypeWebRTCDCEP && s.unordered

	var mid uint32
	if useInterleaving {
		if unordered {
			mid = s.nextUnorderedMID
			s.nextUnorderedMID++
		} else {
			mid = s.nextOrderedMID
			s.nextOrderedMID++
		}
	}

	var head *chunkPayloadData
	fsn := uint32(0)
	for remaining != 0 {
		fragmentSize := min32(maxPayloadSize, remaining)

		// Copy the userdata since we'll have to store it until acked
		// and the caller may re-use the buffer in the mean time
		var userData []byte
		if owned { // CONCORD-PATCH: the caller never modifies raw again; the capacity is cut so nothing appends into it.
			userData = raw[offset : offset+fragmentSize : offset+fragmentSize]
		} else {
			userData = make([]byte, fragmentSize)
			copy(userData, raw[offset:offset+fragmentSize])
		}

		chunk := &chunkPayloadData{
			associationGeneration:  s.associationGeneration,
			stream:                 s,
			streamIdentifier:       s.streamIdentifier,
			userData:               userData,
			unordered:              unordered,
			beginningFragment:      offset == 0,
			endingFragment:         remaining-fragmentSize == 0,
			immediateSack:          false,
			payloadType:            ppi,
			streamSequenceNumber:   s.sequenceNumber,
			messageIdentifier:      mid,
			fragmentSequenceNumber: fsn,
			iData:                  useInterleaving,
			head:                   head,
		}

		if useInterleaving {
			chunk.streamSequenceNumber = uint16(mid) //nolint:gosec
		}

		if head == nil {
			head = chunk
		}

		chunks = append(chunks, chunk)

		fsn++
		remaining -= fragmentSize
		offset += fragmentSize
	}

	// RFC 4960 Sec 6.6
	// Note: When transmitting ordered and unordered data, an endpoint does
	// not increment its Stream Sequence Number when transmitting a DATA
	// chunk with U flag set to 1.
	if !useInterleaving && !unordered {
		s.sequenceNumber++
	}

	s.bufferedAmount += uint64(len(raw))
	if s.association == nil || s.association.trace { // CONCORD-PATCH: see Association.trace
		s.log.Tracef("[%s] bufferedAmount = %d", s.name, s.bufferedAmount)
	}

	return chunks, unordered
}

// Close closes the write-direction of the stream.
// Future calls to Write are not permitted after calling Close.
func (s *Stream) Close() error {
	if sid, resetOutbound := func() (uint16, bool) {
		s.lock.Lock()
		defer s.lock.Unlock()

		s.log.Debugf("[%s] Close: state=%s", s.name, s.state.String())

		if s.state == StreamStateOpen {
			if s.readErr == nil {
				s.state = StreamStateClosing
			} else {
				s.state = StreamStateClosed
			}
			s.log.Debugf("[%s] state change: open => %s", s.name, s.state.String())

			return s.streamIdentifier, true
		}

		return s.streamIdentifier, false
	}(); resetOutbound {
		// Reset the outgoing stream
		// https://tools.ietf.org/html/rfc6525
		return s.association.sendResetRequest(sid)
	}

	return nil
}

// BufferedAmount returns the number of bytes of data currently queued to be sent over this stream.
func (s *Stream) BufferedAmount() uint64 {
	s.lock.RLock()
	defer s.lock.RUnlock()

	return s.bufferedAmount
}

// BufferedAmountLowThreshold returns the number of bytes of buffered outgoing data that is
// considered "low." Defaults to 0.
func (s *Stream) BufferedAmountLowThreshold() uint64 {
	s.lock.RLock()
	defer s.lock.RUnlock()

	return s.bufferedAmountLow
}

// SetBufferedAmountLowThreshold is used to update the threshold.
// See BufferedAmountLowThreshold().
func (s *Stream) SetBufferedAmountLowThreshold(th uint64) {
	s.lock.Lock()
	defer s.lock.Unlock()

	s.bufferedAmountLow = th
}

// OnBufferedAmountLow sets the callback handler which would be called when the number of
// bytes of outgoing data buffered is lower than the threshold.
func (s *Stream) OnBufferedAmountLow(f func()) {
	s.lock.Lock()
	defer s.lock.Unlock()

	s.onBufferedAmountLow = f
}

// This method is called by association's readLoop (go-)routine to notify this stream
// of the specified amount of outgoing data has been delivered to the peer.
func (s *Stream) onBufferReleased(nBytesReleased int) {
	if nBytesReleased <= 0 {
		return
	}

	s.lock.Lock()

	fromAmount := s.bufferedAmount

	if s.bufferedAmount < uint64(nBytesReleased) {
		s.bufferedAmount = 0
		s.log.Errorf("[%s] released buffer size %d should be <= %d",
			s.name, nBytesReleased, s.bufferedAmount)
	} else {
		s.bufferedAmount -= uint64(nBytesReleased)
	}

	if s.association == nil || s.association.trace { // CONCORD-PATCH: see Association.trace
		s.log.Tracef("[%s] bufferedAmount = %d", s.name, s.bufferedAmount)
	}

	if s.onBufferedAmountLow != nil && fromAmount > s.bufferedAmountLow && s.bufferedAmount <= s.bufferedAmountLow {
		f := s.onBufferedAmountLow
		s.lock.Unlock()
		f()

		return
	}

	s.lock.Unlock()
}

func (s *Stream) getNumBytesInReassemblyQueue() int {
	// No lock is required as it reads the size with atomic load function.
	return s.reassemblyQueue.getNumBytes()
}

func (s *Stream) onInboundStreamReset() {
	s.lock.Lock()
	defer s.lock.Unlock()

	s.log.Debugf("[%s] onInboundStreamReset: state=%s", s.name, s.state.String())

	// No more inbound data to read. Unblock the read with io.EOF.
	// This should cause DCEP layer (datachannel package) to call Close() which
	// will reset outgoing stream also.

	// See RFC 8831 section 6.7:
	//	if one side decides to close the data channel, it resets the corresponding
	//	outgoing stream.  When the peer sees that an incoming stream was
	//	reset, it also resets its corresponding outgoing stream.  Once this
	//	is completed, the data channel is closed.

	s.readErr = io.EOF
	s.readNotifier.Broadcast()

	if s.state == StreamStateClosing {
		s.log.Debugf("[%s] state change: closing => closed", s.name)
		s.state = StreamStateClosed
	}
}

func (s *Stream) resetOutgoingStreamSequenceNumbers() {
	s.lock.Lock()
	defer s.lock.Unlock()

	// RFC 8260 extends RFC 6525 stream reset, so when an outgoing stream is
	// reset, the SSN and both ordered/unordered MID counters restart at zero.
	s.sequenceNumber = 0
	s.nextOrderedMID = 0
	s.nextUnorderedMID = 0
}

// State return the stream state.
func (s *Stream) State() StreamState {
	s.lock.RLock()
	defer s.lock.RUnlock()

	return s.state
}
