package object

import (
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"
)

// decoder reads CBOR items from data, starting at pos. Its readers of the
// parts of fixed shapes check the item type and report a *DecodeError.
type decoder struct {
	data []byte
	pos  int
}

func (d *decoder) failAt(offset int, reason string) error {
	return &DecodeError{Offset: offset, Reason: reason}
}

func (d *decoder) eof() error { return d.failAt(len(d.data), "unexpected end of input") }

// head reads an item head. It returns indef true, and no argument, for the
// indefinite-length marker (additional information 31).
func (d *decoder) head() (major byte, arg uint64, indef bool, err error) {
	if d.pos >= len(d.data) {
		return 0, 0, false, d.eof()
	}
	b := d.data[d.pos]
	major, info := b>>5, b&0x1f
	switch {
	case info < 24:
		d.pos++
		return major, uint64(info), false, nil
	case info <= 27:
		n := 1 << (info - 24)
		if len(d.data)-d.pos-1 < n {
			return 0, 0, false, d.eof()
		}
		p := d.data[d.pos+1 : d.pos+1+n]
		switch n {
		case 1:
			arg = uint64(p[0])
		case 2:
			arg = uint64(binary.BigEndian.Uint16(p))
		case 4:
			arg = uint64(binary.BigEndian.Uint32(p))
		default:
			arg = binary.BigEndian.Uint64(p)
		}
		d.pos += 1 + n
		return major, arg, false, nil
	case info == 31:
		d.pos++
		return major, 0, true, nil
	default:
		return 0, 0, false, d.failAt(d.pos, "reserved additional information "+strconv.Itoa(int(info)))
	}
}

// length checks that n items or bytes could fit in the rest of the input.
func (d *decoder) length(start int, n uint64) (int, error) {
	if n > uint64(len(d.data)-d.pos) {
		return 0, d.failAt(start, "length "+strconv.FormatUint(n, 10)+" exceeds the input")
	}
	return int(n), nil
}

// atBreak consumes a break (end of an indefinite-length item) if one is next.
func (d *decoder) atBreak() bool {
	if d.pos < len(d.data) && d.data[d.pos] == cborBreak {
		d.pos++
		return true
	}
	return false
}

// span reads a byte or text string (per major); a definite-length one aliases
// the input, an indefinite-length one is joined into a new slice.
func (d *decoder) span(major byte, what string) ([]byte, error) {
	start := d.pos
	m, n, indef, err := d.head()
	if err != nil {
		return nil, err
	}
	if m != major {
		return nil, d.failAt(start, "expected "+what)
	}
	if !indef {
		size, err := d.length(start, n)
		if err != nil {
			return nil, err
		}
		b := d.data[d.pos : d.pos+size]
		d.pos += size
		return b, nil
	}
	var out []byte
	for !d.atBreak() {
		chunk := d.pos
		m, n, indef, err := d.head()
		if err != nil {
			return nil, err
		}
		if m != major || indef {
			return nil, d.failAt(chunk, "chunk of an indefinite-length "+what+" is not a definite-length "+what)
		}
		size, err := d.length(chunk, n)
		if err != nil {
			return nil, err
		}
		out = append(out, d.data[d.pos:d.pos+size]...)
		d.pos += size
	}
	return out, nil
}

func (d *decoder) text() (string, error) {
	start := d.pos
	b, err := d.span(majorText, "text")
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", d.failAt(start, "text is not valid UTF-8")
	}
	return string(b), nil
}

func (d *decoder) optText() (*string, error) {
	if d.null() {
		return nil, nil
	}
	s, err := d.text()
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func (d *decoder) null() bool {
	if d.pos < len(d.data) && d.data[d.pos] == cborNull {
		d.pos++
		return true
	}
	return false
}

func (d *decoder) uuid() (UUID, error) {
	start := d.pos
	var u UUID
	b, err := d.span(majorBytes, "uuid bytes")
	if err != nil {
		return u, err
	}
	if len(b) != len(u) {
		return u, d.failAt(start, "uuid is not 16 bytes")
	}
	copy(u[:], b)
	return u, nil
}

// int reads an integer field of a fixed shape (major type 0 or 1).
func (d *decoder) int() (int, error) {
	start := d.pos
	m, arg, indef, err := d.head()
	if err != nil {
		return 0, err
	}
	if indef || (m != majorUint && m != majorNint) {
		return 0, d.failAt(start, "expected integer")
	}
	if m == majorUint && arg <= math.MaxInt {
		return int(arg), nil
	}
	if m == majorNint && arg <= math.MaxInt {
		return -1 - int(arg), nil
	}
	return 0, d.failAt(start, "integer out of range")
}

func (d *decoder) optInt() (*int, error) {
	if d.null() {
		return nil, nil
	}
	n, err := d.int()
	if err != nil {
		return nil, err
	}
	return &n, nil
}

func (d *decoder) uint() (uint64, error) {
	start := d.pos
	m, arg, indef, err := d.head()
	if err != nil {
		return 0, err
	}
	if indef || m != majorUint {
		return 0, d.failAt(start, "expected unsigned integer")
	}
	return arg, nil
}

func (d *decoder) bool() (bool, error) {
	if d.pos < len(d.data) {
		switch d.data[d.pos] {
		case cborFalse:
			d.pos++
			return false, nil
		case cborTrue:
			d.pos++
			return true, nil
		}
	}
	return false, d.failAt(d.pos, "expected bool")
}

func (d *decoder) float() (float64, error) {
	if d.pos >= len(d.data) {
		return 0, d.eof()
	}
	var n int
	switch d.data[d.pos] {
	case cborFloat16:
		n = 2
	case cborFloat32:
		n = 4
	case cborFloat64:
		n = 8
	default:
		return 0, d.failAt(d.pos, "expected float")
	}
	if len(d.data)-d.pos-1 < n {
		return 0, d.eof()
	}
	p := d.data[d.pos+1 : d.pos+1+n]
	d.pos += 1 + n
	switch n {
	case 2:
		return halfToFloat64(binary.BigEndian.Uint16(p)), nil
	case 4:
		return singleToFloat64(binary.BigEndian.Uint32(p)), nil
	default:
		return math.Float64frombits(binary.BigEndian.Uint64(p)), nil
	}
}

// halfToFloat64 widens an IEEE 754 half, keeping a NaN's sign and payload.
func halfToFloat64(h uint16) float64 {
	sign := uint64(h>>15) << 63
	exp := uint64(h>>10) & 0x1f
	frac := uint64(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal: frac * 2^-24
		return math.Float64frombits(sign | math.Float64bits(math.Ldexp(float64(frac), -24)))
	case 0x1f: // infinity or NaN
		return math.Float64frombits(sign | 0x7ff<<52 | frac<<42)
	default:
		return math.Float64frombits(sign | (exp-15+1023)<<52 | frac<<42)
	}
}

// singleToFloat64 widens an IEEE 754 single, keeping a NaN's sign and payload
// (a hardware conversion may set the quiet bit).
func singleToFloat64(s uint32) float64 {
	f := math.Float32frombits(s)
	if f == f {
		return float64(f)
	}
	return math.Float64frombits(uint64(s>>31)<<63 | 0x7ff<<52 | uint64(s&0x7fffff)<<29)
}

// array reads an array head; indef is true for an indefinite-length array,
// which ends at a break.
func (d *decoder) array() (n int, indef bool, err error) {
	start := d.pos
	m, arg, indef, err := d.head()
	if err != nil {
		return 0, false, err
	}
	if m != majorArray {
		return 0, false, d.failAt(start, "expected array")
	}
	if indef {
		return 0, true, nil
	}
	n, err = d.length(start, arg)
	return n, false, err
}

// fixed reads the head of a fixed-shape array of n items; call end with the
// returned indef after reading them.
func (d *decoder) fixed(n int) (indef bool, err error) {
	start := d.pos
	got, indef, err := d.array()
	if err != nil || indef {
		return indef, err
	}
	if got != n {
		return false, d.failAt(start, "expected an array of "+strconv.Itoa(n)+" items")
	}
	return false, nil
}

func (d *decoder) end(indef bool) error {
	if indef && !d.atBreak() {
		return d.failAt(d.pos, "indefinite-length array has too many items")
	}
	return nil
}
