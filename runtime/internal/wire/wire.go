// Package wire reads and writes the CBOR framing of requests and responses
// exchanged with the interpreter module (docs/abi.md). Python values inside
// them are encoded by package object.
package wire

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
)

// CBOR major types.
const (
	majorUint   = 0
	majorNint   = 1
	majorBytes  = 2
	majorText   = 3
	majorArray  = 4
	majorSimple = 7
)

// ErrMalformed reports a response that does not follow the protocol.
var ErrMalformed = errors.New("malformed message from interpreter module")

// Writer appends CBOR items to Buf.
type Writer struct {
	Buf []byte
}

// Reset empties the buffer, keeping its capacity.
func (w *Writer) Reset() { w.Buf = w.Buf[:0] }

func (w *Writer) head(major byte, arg uint64) { w.Buf = object.AppendCBORHead(w.Buf, major, arg) }

// Array writes an array header of n items.
func (w *Writer) Array(n int) { w.head(majorArray, uint64(n)) }

// Uint writes an unsigned integer.
func (w *Writer) Uint(v uint64) { w.head(majorUint, v) }

// Text writes a text string.
func (w *Writer) Text(s string) {
	w.head(majorText, uint64(len(s)))
	w.Buf = append(w.Buf, s...)
}

// Bytes writes a byte string.
func (w *Writer) Bytes(b []byte) {
	w.head(majorBytes, uint64(len(b)))
	w.Buf = append(w.Buf, b...)
}

// Bool writes a boolean.
func (w *Writer) Bool(v bool) {
	if v {
		w.Buf = append(w.Buf, 0xf5)
	} else {
		w.Buf = append(w.Buf, 0xf4)
	}
}

// Null writes null.
func (w *Writer) Null() { w.Buf = append(w.Buf, 0xf6) }

// OptText writes s when present is true, else null.
func (w *Writer) OptText(s string, present bool) {
	if present {
		w.Text(s)
	} else {
		w.Null()
	}
}

// OptUint writes v, or null when v is zero.
func (w *Writer) OptUint(v uint64) {
	if v == 0 {
		w.Null()
	} else {
		w.Uint(v)
	}
}

// Value writes a Python value.
func (w *Writer) Value(v object.Value) error {
	b, err := object.AppendEncode(w.Buf, v)
	if err != nil {
		return err
	}
	w.Buf = b
	return nil
}

// Reader reads CBOR items from a byte slice.
type Reader struct {
	data []byte
	pos  int
}

// NewReader returns a reader over b.
func NewReader(b []byte) *Reader { return &Reader{data: b} }

// Reset makes r read b from its start.
func (r *Reader) Reset(b []byte) { *r = Reader{data: b} }

// Done reports whether all input was consumed.
func (r *Reader) Done() bool { return r.pos == len(r.data) }

// Rest returns the bytes not read yet (aliasing the reader's data).
func (r *Reader) Rest() []byte { return r.data[r.pos:] }

func (r *Reader) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", ErrMalformed, what, r.pos)
}

func (r *Reader) head() (byte, uint64, error) {
	if r.pos >= len(r.data) {
		return 0, 0, r.fail("unexpected end")
	}
	b := r.data[r.pos]
	major, info := b>>5, b&0x1f
	r.pos++
	var n int
	switch {
	case info < 24:
		return major, uint64(info), nil
	case info == 24:
		n = 1
	case info == 25:
		n = 2
	case info == 26:
		n = 4
	case info == 27:
		n = 8
	default:
		return 0, 0, r.fail("indefinite length")
	}
	if len(r.data)-r.pos < n {
		return 0, 0, r.fail("unexpected end")
	}
	var arg uint64
	for _, c := range r.data[r.pos : r.pos+n] {
		arg = arg<<8 | uint64(c)
	}
	r.pos += n
	return major, arg, nil
}

func (r *Reader) expect(major byte, what string) (uint64, error) {
	start := r.pos
	m, arg, err := r.head()
	if err != nil {
		return 0, err
	}
	if m != major {
		r.pos = start
		return 0, r.fail("expected " + what)
	}
	return arg, nil
}

// Array reads an array header.
func (r *Reader) Array() (int, error) {
	n, err := r.expect(majorArray, "array")
	if err != nil {
		return 0, err
	}
	if n > uint64(len(r.data)-r.pos) {
		return 0, r.fail("array longer than input")
	}
	return int(n), nil
}

// ArrayOf reads an array header of exactly n items.
func (r *Reader) ArrayOf(n int) error {
	got, err := r.Array()
	if err != nil {
		return err
	}
	if got != n {
		return r.fail(fmt.Sprintf("array of %d items, want %d", got, n))
	}
	return nil
}

// Uint reads an unsigned integer.
func (r *Reader) Uint() (uint64, error) { return r.expect(majorUint, "unsigned integer") }

// Uint32 reads an unsigned integer that fits 32 bits.
func (r *Reader) Uint32() (uint32, error) {
	v, err := r.Uint()
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint32 {
		return 0, r.fail("integer out of range")
	}
	return uint32(v), nil
}

func (r *Reader) span(major byte, what string) ([]byte, error) {
	n, err := r.expect(major, what)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.data)-r.pos) {
		return nil, r.fail(what + " longer than input")
	}
	b := r.data[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// Text reads a text string.
func (r *Reader) Text() (string, error) {
	b, err := r.span(majorText, "text")
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", r.fail("invalid UTF-8")
	}
	return string(b), nil
}

// Bytes reads a byte string; the result aliases the input.
func (r *Reader) Bytes() ([]byte, error) { return r.span(majorBytes, "bytes") }

// Bool reads a boolean.
func (r *Reader) Bool() (bool, error) {
	if r.pos < len(r.data) {
		switch r.data[r.pos] {
		case 0xf4:
			r.pos++
			return false, nil
		case 0xf5:
			r.pos++
			return true, nil
		}
	}
	return false, r.fail("expected bool")
}

// Null consumes a null if one is next and reports whether it did.
func (r *Reader) Null() bool {
	if r.pos < len(r.data) && r.data[r.pos] == 0xf6 {
		r.pos++
		return true
	}
	return false
}

// OptText reads a text string or null.
func (r *Reader) OptText() (string, bool, error) {
	if r.Null() {
		return "", false, nil
	}
	s, err := r.Text()
	return s, err == nil, err
}

// Value reads a Python value.
func (r *Reader) Value() (object.Value, error) {
	v, n, err := object.DecodePrefix(r.data[r.pos:])
	if err != nil {
		return nil, err
	}
	r.pos += n
	return v, nil
}

// Values reads an array of Python values.
func (r *Reader) Values() ([]object.Value, error) {
	n, err := r.Array()
	if err != nil {
		return nil, err
	}
	out := make([]object.Value, n)
	for i := range out {
		if out[i], err = r.Value(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Pairs reads a flat array of key, value items.
func (r *Reader) Pairs() ([]object.Pair, error) {
	n, err := r.Array()
	if err != nil {
		return nil, err
	}
	if n%2 != 0 {
		return nil, r.fail("odd pairs array")
	}
	out := make([]object.Pair, n/2)
	for i := range out {
		if out[i].Key, err = r.Value(); err != nil {
			return nil, err
		}
		if out[i].Value, err = r.Value(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
