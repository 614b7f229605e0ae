package link

import (
	"reflect"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v4"
)

// streamMode is the delivery mode an SCTP stream really uses, read from pion's
// unexported fields (the exported DataChannel accessors only echo the init).
type streamMode struct {
	Unordered        bool
	ReliabilityType  byte
	ReliabilityValue uint32
}

func (c *Conn) streamModeForTest(ch Channel) (streamMode, error) {
	st := c.chans[ch].Load()
	stream, err := streamOf(st.rw)
	if err != nil {
		return streamMode{}, err
	}
	v := reflect.ValueOf(stream).Elem()
	return streamMode{
		Unordered:        v.FieldByName("unordered").Bool(),
		ReliabilityType:  byte(v.FieldByName("reliabilityType").Uint()),
		ReliabilityValue: uint32(v.FieldByName("reliabilityValue").Uint()),
	}, nil
}

func (c *Conn) dataChannelForTest(ch Channel) *webrtc.DataChannel { return c.dcs[ch] }

// detachedForTest returns pion's view of the detached channel config.
func (c *Conn) detachedForTest(ch Channel) *datachannel.DataChannel {
	dc, _ := c.chans[ch].Load().rw.(*datachannel.DataChannel)
	return dc
}

// rawWriteForTest writes without Send's size and backpressure checks, to make
// the remote receive what a well-behaved Conn never sends.
func (c *Conn) rawWriteForTest(ch Channel, p []byte) error {
	_, err := c.chans[ch].Load().rw.Write(p)
	return err
}

// withoutFastPathsForTest makes c send as it does with stock pion/sctp (fastpath.go): owned
// writes through the detached channel's copying Write. Call it once the Conn is ready.
func (c *Conn) withoutFastPathsForTest() {
	for ch := range c.chans {
		if st := c.chans[ch].Load(); st != nil {
			plain := *st
			plain.owned, plain.batch = nil, nil
			c.chans[ch].Store(&plain)
		}
	}
}

// setCloseBoundForTest sets closeBound until the returned restore is called.
func setCloseBoundForTest(d time.Duration) (restore func()) {
	old := closeBound
	closeBound = d
	return func() { closeBound = old }
}

// wrapClosePCForTest makes c's teardown close pion through wrap, given the real close.
func (c *Conn) wrapClosePCForTest(wrap func(closePC func() error) error) {
	real := c.closePC
	c.closePC = func() error { return wrap(real) }
}

func (c *Conn) dtlsForTest() *webrtc.DTLSTransport { return c.dtls }
