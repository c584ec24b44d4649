// Package cbor holds what package object's value encoding and the
// runtime's wire framing both write: a CBOR item's head.
package cbor

import (
	"encoding/binary"
	"math"
)

// AppendHead appends the head of a CBOR item, its major type (0 to 7)
// and argument, in the shortest form (RFC 8949, section 3), to dst.
func AppendHead(dst []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(dst, m|byte(arg))
	case arg <= math.MaxUint8:
		return append(dst, m|24, byte(arg))
	case arg <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, m|25), uint16(arg))
	case arg <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, m|26), uint32(arg))
	}
	return binary.BigEndian.AppendUint64(append(dst, m|27), arg)
}
