package netmsg

import (
	"errors"
	"strings"
	"testing"
)

func TestConsumeErrors(t *testing.T) {
	ping := AppendPing(nil, &Ping{Nonce: 1, SendTime: 2})
	tests := []struct {
		name     string
		consume  func([]byte) (int, error)
		in       []byte
		want     error
		wantType Type
		offset   int
	}{
		{"empty HostSnapshot", func(b []byte) (int, error) { return ConsumeHostSnapshot(b, &HostSnapshot{}) }, nil, ErrShortBuffer, TypeHostSnapshot, 0},
		{"empty Ping", func(b []byte) (int, error) { return ConsumePing(b, &Ping{}) }, []byte{}, ErrShortBuffer, TypePing, 0},
		{"Ping given to Pong", func(b []byte) (int, error) { return ConsumePong(b, &Pong{}) }, ping, ErrWrongType, TypePing, 0},
		{"Ping given to EntityUpdates", func(b []byte) (int, error) { return ConsumeEntityUpdates(b, &EntityUpdates{}) }, ping, ErrWrongType, TypePing, 0},
		{"EntityUpdates given to Hello", func(b []byte) (int, error) { return ConsumeHello(b, &Hello{}) }, []byte{5}, ErrWrongType, TypeEntityUpdates, 0},
		{"TRNP given to ConsumeExt", func(b []byte) (int, error) { _, _, n, err := ConsumeExt(b); return n, err }, []byte{3, 0, 0, 0, 0}, ErrWrongType, TypeHostCommands, 0},
		{"empty ConsumeExt", func(b []byte) (int, error) { _, _, n, err := ConsumeExt(b); return n, err }, nil, ErrShortBuffer, 0, 0},
		{"PeerEntered id too long", func(b []byte) (int, error) { return ConsumePeerEntered(b, nil) }, bld{1}.u64(1).u32(MaxPeerIDLen + 1), ErrInvalidPeerID, TypePeerEntered, 9},
		{"Update width 3", func(b []byte) (int, error) { return ConsumeEntityUpdates(b, nil) }, bld{5}.u64(1).u32(1).u64(1).u16(0xc000).u32(0), ErrInvalidMaskWidth, TypeEntityUpdates, 21},
		{"Fragment past total", func(b []byte) (int, error) { return ConsumeFragment(b, &Fragment{}) }, bld{6}.u32(13).u32(1).u32(0).u32(0).raw(1), ErrFragment, TypeFragment, 13},
		{"Close too long", func(b []byte) (int, error) { return ConsumeClose(b, &Close{}) }, bld{10}.u32(4).u16(0).u16(300), ErrInvalidReason, TypeClose, 7},
		{"CrdtBatch short body", func(b []byte) (int, error) { return ConsumeCrdtBatch(b, &CrdtBatch{}) }, bld{7}.u32(0), ErrBodyLength, TypeCrdtBatch, 1},
		{"PeerExited short", func(b []byte) (int, error) { return ConsumePeerExited(b, &PeerExited{}) }, bld{2}.raw(1), ErrShortBuffer, TypePeerExited, 1},
		{"PeerCommands count", func(b []byte) (int, error) { return ConsumePeerCommands(b, &PeerCommands{}) }, bld{4}.u32(2).u32(0).u32(0), ErrShortBuffer, TypePeerCommands, 1},
		{"HostCommands truncated action", func(b []byte) (int, error) { return ConsumeHostCommands(b, &HostCommands{}) }, bld{3}.u32(0).u32(0).u32(0).u32(0).u32(1).u32(1).u32(5).raw(1), ErrShortBuffer, TypeHostCommands, 29},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := tt.consume(tt.in)
			if n != 0 {
				t.Errorf("n = %d on error, want 0", n)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %T, want *ProtocolError", err)
			}
			if pe.Type != tt.wantType || pe.Offset != tt.offset {
				t.Errorf("ProtocolError{Type: %v, Offset: %d}, want {%v, %d}", pe.Type, pe.Offset, tt.wantType, tt.offset)
			}
		})
	}
}

func TestProtocolErrorString(t *testing.T) {
	_, err := ConsumePing([]byte{8, 16, 0, 0, 0, 1}, nil)
	want := "netmsg: protocol error in Ping at offset 5: netmsg: short buffer: body of 16 bytes, 1 left"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	e := &ProtocolError{Type: TypeFragment, Offset: -1, Err: ErrFragment}
	if got := e.Error(); got != "netmsg: protocol error in Fragment: netmsg: invalid fragment" {
		t.Errorf("Error() = %q", got)
	}
}

func TestCheckSize(t *testing.T) {
	tests := []struct {
		name  string
		check func([]byte) error
		n     int
		ok    bool
	}{
		{"empty datagram", CheckDatagram, 0, true},
		{"full datagram", CheckDatagram, MaxDatagram, true},
		{"datagram over", CheckDatagram, MaxDatagram + 1, false},
		{"empty reliable", CheckReliable, 0, true},
		{"full reliable", CheckReliable, MaxReliableMessage, true},
		{"reliable over", CheckReliable, MaxReliableMessage + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, tt.n)
			if tt.n > 0 {
				b[0] = byte(TypeEntityUpdates)
			}
			err := tt.check(b)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			var pe *ProtocolError
			if !tt.ok && (!errors.As(err, &pe) || !errors.Is(err, ErrTooLarge) || pe.Type != TypeEntityUpdates) {
				t.Errorf("err = %v, want *ProtocolError wrapping ErrTooLarge", err)
			}
		})
	}
}

func TestMaskWidth(t *testing.T) {
	tests := []struct {
		props int
		want  Width
		bad   bool
	}{
		{-1, 0, true}, {0, Width8, false}, {1, Width8, false}, {8, Width8, false},
		{9, Width16, false}, {16, Width16, false}, {17, Width32, false}, {32, Width32, false},
		{33, 0, true}, {1000, 0, true},
	}
	for _, tt := range tests {
		w, err := MaskWidth(tt.props)
		if tt.bad {
			if !errors.Is(err, ErrInvalidMaskWidth) {
				t.Errorf("MaskWidth(%d) err = %v, want ErrInvalidMaskWidth", tt.props, err)
			}
			continue
		}
		if err != nil || w != tt.want {
			t.Errorf("MaskWidth(%d) = %v, %v; want %v", tt.props, w, err, tt.want)
		}
	}
}

func TestWidth(t *testing.T) {
	tests := []struct {
		w           Width
		bytes, bits int
		s           string
	}{
		{Width8, 1, 8, "u8"}, {Width16, 2, 16, "u16"}, {Width32, 4, 32, "u32"}, {3, 0, 0, "Width(3)"}, {200, 0, 0, "Width(200)"},
	}
	for _, tt := range tests {
		if tt.w.Bytes() != tt.bytes || tt.w.Bits() != tt.bits || tt.w.String() != tt.s || tt.w.Valid() != (tt.bytes != 0) {
			t.Errorf("Width %d: Bytes %d Bits %d String %q Valid %v", uint8(tt.w), tt.w.Bytes(), tt.w.Bits(), tt.w.String(), tt.w.Valid())
		}
	}
}

func TestCheckMask(t *testing.T) {
	tests := []struct {
		name  string
		u     Update
		props int
		ok    bool
	}{
		{"1 property bit 0", Update{Width: Width8, Mask: 1}, 1, true},
		{"1 property bit 1", Update{Width: Width8, Mask: 2}, 1, false},
		{"8 properties all", Update{Width: Width8, Mask: 0xff}, 8, true},
		{"8 properties u16 mask", Update{Width: Width16, Mask: 0xff}, 8, false},
		{"9 properties u8 mask", Update{Width: Width8, Mask: 1}, 9, false},
		{"9 properties bit 9", Update{Width: Width16, Mask: 1 << 9}, 9, false},
		{"16 properties all", Update{Width: Width16, Mask: 0xffff}, 16, true},
		{"17 properties bit 16", Update{Width: Width32, Mask: 1 << 16}, 17, true},
		{"17 properties bit 17", Update{Width: Width32, Mask: 1 << 17}, 17, false},
		{"32 properties all", Update{Width: Width32, Mask: 0xffffffff}, 32, true},
		{"33 properties", Update{Width: Width32}, 33, false},
		{"0 properties empty", Update{Width: Width8}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.u.CheckMask(tt.props)
			if tt.ok != (err == nil) {
				t.Fatalf("CheckMask = %v, want ok=%v", err, tt.ok)
			}
			var pe *ProtocolError
			if err != nil && (!errors.Is(err, ErrMaskMismatch) || errors.As(err, &pe)) {
				t.Errorf("err = %v, want a plain ErrMaskMismatch (drop, not close)", err)
			}
		})
	}
}

func TestType(t *testing.T) {
	tests := []struct {
		t                     Type
		s                     string
		trnp, ext, app, known bool
	}{
		{TypeHostSnapshot, "HostSnapshot", true, false, false, true},
		{TypeEntityUpdates, "EntityUpdates", true, false, false, true},
		{TypeFragment, "Fragment", false, true, false, true},
		{TypeHello, "Hello", false, true, false, true},
		{TypeStamp, "Stamp", false, true, false, true},
		{TypeDigest, "Digest", false, true, false, true},
		{TypeRelay, "Relay", false, true, false, true},
		{TypeActions, "Actions", false, true, false, true},
		{TypeForget, "Forget", false, true, false, true},
		{TypePackedUpdates, "PackedUpdates", false, true, false, true},
		{TypeDeltaUpdates, "DeltaUpdates", false, true, false, true},
		{TypeAck, "Ack", false, true, false, true},
		{TypeRunUpdates, "RunUpdates", false, true, false, true},
		{21, "Extension(21)", false, true, false, false},
		{127, "Extension(127)", false, true, false, false},
		{128, "Application(128)", false, false, true, false},
		{255, "Application(255)", false, false, true, false},
	}
	for _, tt := range tests {
		if tt.t.String() != tt.s || tt.t.IsTRNP() != tt.trnp || tt.t.IsExtension() != tt.ext ||
			tt.t.IsApplication() != tt.app || tt.t.Known() != tt.known || tt.t.IsFramed() != !tt.trnp {
			t.Errorf("Type %d: %q trnp=%v ext=%v app=%v known=%v", uint8(tt.t), tt.t.String(), tt.t.IsTRNP(), tt.t.IsExtension(), tt.t.IsApplication(), tt.t.Known())
		}
	}
	for i := range 256 {
		typ := Type(i)
		n := 0
		for _, in := range []bool{typ.IsTRNP(), typ.IsExtension(), typ.IsApplication()} {
			if in {
				n++
			}
		}
		if n != 1 {
			t.Errorf("type %d is in %d ranges", i, n)
		}
	}
}

func TestValidPeerID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"", true}, {idASCII, true}, {idZoe, true}, {idEmoji, true}, {idMaxASCII, true}, {idMaxCJK, true}, {idMaxEmoji, true},
		{idMaxASCII + "a", false}, {"\xff", false}, {"a\xc0\xafb", false}, {"\xed\xa0\x80", false},
	}
	for _, tt := range tests {
		err := ValidPeerID(tt.id)
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidPeerID)) {
			t.Errorf("ValidPeerID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
	}
}

func TestEncoderPanics(t *testing.T) {
	tests := []struct {
		name string
		f    func()
	}{
		{"update width 3", func() { AppendUpdate(nil, &Update{Width: 3}) }},
		{"update u8 mask overflow", func() { AppendUpdate(nil, &Update{Width: Width8, Mask: 0x100}) }},
		{"update u16 mask overflow", func() { AppendUpdate(nil, &Update{Width: Width16, Mask: 0x10000}) }},
		{"update data too long", func() { AppendUpdate(nil, &Update{Data: make([]byte, MaxUpdateData+1)}) }},
		{"entity updates with bad update", func() {
			AppendEntityUpdates(nil, &EntityUpdates{Updates: []Update{{Width: Width8, Mask: 0x1ff}}})
		}},
		{"writer with bad update", func() {
			var w EntityUpdatesWriter
			w.Reset(nil, 0, 0)
			w.Add(&Update{Width: 7})
		}},
		{"peer id too long", func() { AppendPeerEntered(nil, &PeerEntered{PeerInfo{1, idMaxASCII + "x"}}) }},
		{"peer id bad UTF-8", func() { AppendHostSnapshot(nil, &HostSnapshot{Peers: []PeerInfo{{1, "\xff"}}}) }},
		{"ext with TRNP type", func() { AppendExt(nil, TypeHostCommands, nil) }},
		{"finish without header", func() { FinishExt([]byte{1, 2}, 0) }},
		{"finish on TRNP byte", func() { FinishExt([]byte{5, 0, 0, 0, 0}, 0) }},
		{"finish negative mark", func() { FinishExt([]byte{8, 0, 0, 0, 0}, -1) }},
		{"fragment past total", func() { AppendFragment(nil, &Fragment{TotalLength: 2, Offset: 1, Chunk: []byte{1, 2}}) }},
		{"fragmenter too small", func() { NewFragmenter(nil, 1, FragmentOverhead) }},
		{"fragmenter too large", func() { NewFragmenter(nil, 1, MaxReliableMessage+1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if s, ok := r.(string); !ok || !strings.HasPrefix(s, "netmsg: ") {
					t.Errorf("panic %v, want a netmsg: message", r)
				}
			}()
			tt.f()
		})
	}
}

func TestAppendCloseRepairsReason(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"short", "bye", "bye"},
		{"exactly max", strings.Repeat("a", MaxCloseReason), strings.Repeat("a", MaxCloseReason)},
		{"ascii over", strings.Repeat("a", MaxCloseReason+10), strings.Repeat("a", MaxCloseReason)},
		// 255 ASCII bytes then a 3-byte rune: the rune is dropped whole.
		{"cut at rune boundary", strings.Repeat("a", 255) + "例", strings.Repeat("a", 255)},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendClose(nil, &Close{Code: 4, Reason: tt.in})
			var m Close
			if _, err := ConsumeClose(b, &m); err != nil {
				t.Fatal(err)
			}
			if m.Reason != tt.want || m.Code != 4 {
				t.Errorf("reason %q (%d bytes), want %q", m.Reason, len(m.Reason), tt.want)
			}
		})
	}
}
