package object

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"
)

// Encode returns the CBOR encoding of v described in docs/values.md.
func Encode(v Value) ([]byte, error) {
	return AppendEncode(make([]byte, 0, 64), v)
}

// AppendEncode appends the CBOR encoding of v to dst and returns the extended
// buffer. On error it returns dst with its original length (the bytes past it,
// within its capacity, may have been overwritten) and an *EncodeError.
func AppendEncode(dst []byte, v Value) ([]byte, error) {
	e := encoder{buf: dst}
	if err := e.value(v, 0); err != nil {
		return dst, err
	}
	return e.buf, nil
}

type encoder struct {
	buf []byte
}

// head writes a major type and argument in shortest form.
func (e *encoder) head(major byte, arg uint64) { e.buf = AppendCBORHead(e.buf, major, arg) }

func (e *encoder) int(v int64) {
	if v >= 0 {
		e.head(majorUint, uint64(v))
	} else {
		e.head(majorNint, uint64(^v)) // -1 - v
	}
}

func (e *encoder) float(f float64) {
	e.buf = binary.BigEndian.AppendUint64(append(e.buf, cborFloat64), math.Float64bits(f))
}

func (e *encoder) text(s string) error {
	if !utf8.ValidString(s) {
		return &EncodeError{Reason: "text is not valid UTF-8"}
	}
	e.head(majorText, uint64(len(s)))
	e.buf = append(e.buf, s...)
	return nil
}

func (e *encoder) bytes(b []byte) {
	e.head(majorBytes, uint64(len(b)))
	e.buf = append(e.buf, b...)
}

func (e *encoder) bool(b bool) {
	if b {
		e.buf = append(e.buf, cborTrue)
	} else {
		e.buf = append(e.buf, cborFalse)
	}
}

func (e *encoder) optInt(p *int) {
	if p == nil {
		e.buf = append(e.buf, cborNull)
	} else {
		e.int(int64(*p))
	}
}

func (e *encoder) optText(p *string) error {
	if p == nil {
		e.buf = append(e.buf, cborNull)
		return nil
	}
	return e.text(*p)
}

// tagged writes a tag followed by a text string.
func (e *encoder) tagged(tag uint64, s string) error {
	e.head(majorTag, tag)
	return e.text(s)
}

func (e *encoder) bigInt(n *big.Int) {
	if n.IsInt64() {
		e.int(n.Int64())
		return
	}
	if n.Sign() > 0 {
		e.head(majorTag, tagPosBignum)
	} else {
		e.head(majorTag, tagNegBignum)
		n = new(big.Int).Not(n) // -1 - n
	}
	size := (n.BitLen() + 7) / 8
	e.head(majorBytes, uint64(size))
	e.buf = append(e.buf, make([]byte, size)...)
	n.FillBytes(e.buf[len(e.buf)-size:])
}

func (e *encoder) items(xs []Value, depth int) error {
	e.head(majorArray, uint64(len(xs)))
	for i, x := range xs {
		if err := e.value(x, depth+1); err != nil {
			return prefixPath(err, indexSeg(i))
		}
	}
	return nil
}

// pairs writes ps as a flat key, value array with the items at depth+1.
// Attribute names are shown in error paths as .name when attrs is true.
func (e *encoder) pairs(ps []Pair, depth int, attrs bool) error {
	e.head(majorArray, 2*uint64(len(ps)))
	for i, p := range ps {
		if err := e.value(p.Key, depth+1); err != nil {
			return prefixPath(err, ".keys()"+indexSeg(i))
		}
		if err := e.value(p.Value, depth+1); err != nil {
			return prefixPath(err, entrySeg(p.Key, attrs))
		}
	}
	return nil
}

// entrySeg is the error path segment of the value stored under key.
func entrySeg(key Value, attr bool) string {
	if s, ok := key.(Str); ok && attr {
		return "." + string(s)
	}
	return "[" + Repr(key) + "]"
}

func (e *encoder) class(c ClassType, depth int) error {
	if depth > MaxDepth {
		return errTooDeep()
	}
	e.head(majorTag, tagClass)
	e.head(majorArray, 5)
	if err := e.text(c.Name); err != nil {
		return prefixPath(err, ".__name__")
	}
	e.bytes(c.ID[:])
	e.bool(c.HostDefined)
	e.bool(c.IsDataclass)
	return e.pairs(c.Attrs, depth, true)
}

func errTooDeep() error {
	return &EncodeError{Reason: "nested deeper than 1000 levels"}
}

func (e *encoder) value(v Value, depth int) error {
	if depth > MaxDepth {
		return errTooDeep()
	}
	switch x := v.(type) {
	case None:
		e.buf = append(e.buf, cborNull)
	case Bool:
		e.bool(bool(x))
	case Int:
		e.int(int64(x))
	case Float:
		e.float(float64(x))
	case Str:
		return e.text(string(x))
	case Bytes:
		e.bytes(x)
	case List:
		return e.items(x, depth)
	case Tuple:
		e.head(majorTag, tagTuple)
		return e.items(x, depth)
	case Dict:
		e.head(majorTag, tagDict)
		return e.pairs(x, depth, false)
	case BigInt:
		if x.Big == nil {
			return &EncodeError{Reason: "BigInt holds a nil *big.Int"}
		}
		e.bigInt(x.Big)
	case Set:
		e.head(majorTag, tagSet)
		return e.items(x, depth)
	case FrozenSet:
		e.head(majorTag, tagFrozenSet)
		return e.items(x, depth)
	case NamedTuple:
		return e.namedTuple(x, depth)
	case ClassType:
		return e.class(x, depth)
	case Instance:
		e.head(majorTag, tagInstance)
		e.head(majorArray, 3)
		if err := e.class(x.Class, depth+1); err != nil {
			return prefixPath(err, ".__class__")
		}
		e.bytes(x.ID[:])
		return e.pairs(x.Attrs, depth, true)
	case Exception:
		e.head(majorTag, tagException)
		e.head(majorArray, 2)
		if err := e.text(x.Type); err != nil {
			return err
		}
		if !x.HasMessage {
			e.buf = append(e.buf, cborNull)
			return nil
		}
		return e.text(x.Message)
	case Path:
		return e.tagged(tagPath, string(x))
	case Date:
		e.head(majorTag, tagDate)
		e.head(majorArray, 3)
		e.int(int64(x.Year))
		e.int(int64(x.Month))
		e.int(int64(x.Day))
	case DateTime:
		e.head(majorTag, tagDateTime)
		e.head(majorArray, 9)
		e.int(int64(x.Year))
		e.int(int64(x.Month))
		e.int(int64(x.Day))
		e.int(int64(x.Hour))
		e.int(int64(x.Minute))
		e.int(int64(x.Second))
		e.int(int64(x.Microsecond))
		e.optInt(x.Offset)
		return e.optText(x.TZName)
	case Time:
		e.head(majorTag, tagTime)
		e.head(majorArray, 7)
		e.int(int64(x.Hour))
		e.int(int64(x.Minute))
		e.int(int64(x.Second))
		e.int(int64(x.Microsecond))
		e.optInt(x.Offset)
		if err := e.optText(x.TZName); err != nil {
			return err
		}
		e.int(int64(x.Fold))
	case TimeDelta:
		e.head(majorTag, tagTimeDelta)
		e.head(majorArray, 3)
		e.int(int64(x.Days))
		e.int(int64(x.Seconds))
		e.int(int64(x.Microseconds))
	case TimeZone:
		e.head(majorTag, tagTimeZone)
		e.head(majorArray, 2)
		e.int(int64(x.Offset))
		return e.optText(x.Name)
	case Function:
		e.head(majorTag, tagFunction)
		e.head(majorArray, 2)
		if err := e.text(x.Name); err != nil {
			return err
		}
		return e.optText(x.Doc)
	case Opaque:
		return e.tagged(tagRepr, string(x))
	case Cycle:
		return e.tagged(tagCycle, string(x))
	case Ellipsis:
		e.head(majorTag, tagEllipsis)
		e.buf = append(e.buf, cborNull)
	case NotImplemented:
		e.head(majorTag, tagNotImplemented)
		e.buf = append(e.buf, cborNull)
	case Complex:
		e.head(majorTag, tagComplex)
		e.head(majorArray, 2)
		e.float(x.Real)
		e.float(x.Imag)
	case Decimal:
		return e.tagged(tagDecimal, string(x))
	case TypeObject:
		return e.tagged(tagType, string(x))
	case BuiltinFunction:
		return e.tagged(tagBuiltin, string(x))
	case Module:
		e.head(majorTag, tagModule)
		e.head(majorArray, 3)
		if err := e.text(x.Name); err != nil {
			return err
		}
		e.bytes(x.ID[:])
		return e.pairs(x.Attrs, depth, true)
	case File:
		e.head(majorTag, tagFile)
		e.head(majorArray, 3)
		if err := e.text(x.Path); err != nil {
			return err
		}
		if err := e.text(x.Mode); err != nil {
			return err
		}
		e.head(majorUint, x.Position)
	case nil:
		return &EncodeError{Reason: "nil Value"}
	default: // a pointer to a value type, such as *Int
		return &EncodeError{Reason: fmt.Sprintf("unsupported Value type %T", v)}
	}
	return nil
}

func (e *encoder) namedTuple(t NamedTuple, depth int) error {
	if len(t.Fields) != len(t.Values) {
		return &EncodeError{Reason: "named tuple has " + strconv.Itoa(len(t.Fields)) + " fields but " + strconv.Itoa(len(t.Values)) + " values"}
	}
	e.head(majorTag, tagNamedTuple)
	e.head(majorArray, 3)
	if err := e.text(t.TypeName); err != nil {
		return err
	}
	e.head(majorArray, uint64(len(t.Fields)))
	for _, f := range t.Fields {
		if err := e.text(f); err != nil {
			return err
		}
	}
	e.head(majorArray, uint64(len(t.Values)))
	for i, x := range t.Values {
		if err := e.value(x, depth+1); err != nil {
			return prefixPath(err, "."+t.Fields[i])
		}
	}
	return nil
}

// AppendCBORHead appends the head of a CBOR item, its major type (0 to
// 7) and argument, in the shortest form (RFC 8949, section 3), to dst.
// The value encoding here and the runtime's wire framing both write
// heads with it.
func AppendCBORHead(dst []byte, major byte, arg uint64) []byte {
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
