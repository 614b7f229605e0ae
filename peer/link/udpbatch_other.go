//go:build !linux

package link

import "net"

// Batched UDP (sendmmsg, recvmmsg, GSO) is Linux only; elsewhere the socket is used as it is.

var gsoControlLen = 0

func appendGSOControl(dst []byte, _ uint16) []byte { return dst }

func gsoUnsupported(error) bool { return true }

func batchSocket(net.PacketConn) *batchConn { return nil }

func groSegmentSize([]byte) int { return 0 }
