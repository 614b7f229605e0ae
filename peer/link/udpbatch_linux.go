package link

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// gsoControlLen is the size of one UDP_SEGMENT control message.
var gsoControlLen = unix.CmsgSpace(2)

// appendGSOControl appends the control message that makes the kernel cut a send into segments
// of size bytes (the last may be shorter).
func appendGSOControl(dst []byte, size uint16) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, gsoControlLen)...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&dst[n]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(dst[n+unix.CmsgLen(0):], size)
	return dst
}

// gsoUnsupported reports whether a send failed because segmentation is not available (an old
// kernel, a device without checksum offload).
func gsoUnsupported(err error) bool {
	return errors.Is(err, unix.EIO) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) ||
		errors.Is(err, unix.ENOPROTOOPT)
}

// batchSocket returns c with batched writes and reads when c is an OS UDP socket, or a wrapper
// of one that offers batch IO itself (WriteBatch and ReadBatch of golang.org/x/net/ipv4, and
// SyscallConn for the GSO check), else nil.
func batchSocket(c net.PacketConn) *batchConn {
	var bio batchIO
	switch uc := c.(type) {
	case *net.UDPConn:
		bio = ipv4.NewPacketConn(uc)
	case batchIO:
		bio = uc
	default:
		return nil
	}
	sc, ok := c.(syscall.Conn)
	return newBatchConn(c, bio, ok && gsoAvailable(sc), ok && enableGRO(sc), true)
}

// groSegmentSize returns the segment size of a UDP_GRO control message in oob, 0 if there is
// none (a single datagram).
func groSegmentSize(oob []byte) int {
	hdr := unix.CmsgLen(0)
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < hdr || n > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && n >= hdr+4 {
			return int(int32(binary.NativeEndian.Uint32(oob[hdr:])))
		}
		oob = oob[min(unix.CmsgSpace(n-hdr), len(oob)):]
	}
	return 0
}

// gsoAvailable reports whether the kernel knows UDP_SEGMENT on c (Linux ≥ 4.18).
func gsoAvailable(c syscall.Conn) bool {
	return onSocket(c, func(fd int) bool {
		_, err := unix.GetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		return err == nil
	})
}

// enableGRO turns UDP_GRO on for c (Linux ≥ 5.0): the kernel then hands over a train of
// same-size datagrams from one sender, a GSO send above all, as one read instead of cutting it
// into datagrams and queueing each (on loopback, on the sender's time).
func enableGRO(c syscall.Conn) bool {
	return onSocket(c, func(fd int) bool {
		return unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) == nil
	})
}

// onSocket runs f on c's file descriptor and returns what it says (false if c has none).
func onSocket(c syscall.Conn, f func(fd int) bool) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) { ok = f(int(fd)) })
	return ok
}
