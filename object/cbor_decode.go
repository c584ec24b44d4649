package object

import (
	"math"
	"math/big"
	"strconv"
)

// Decode decodes one CBOR-encoded value (docs/values.md) that must fill all
// of b. Errors are *DecodeError (matching ErrMalformed). The result never
// aliases b.
func Decode(b []byte) (Value, error) {
	v, n, err := DecodePrefix(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, &DecodeError{Offset: n, Reason: "trailing bytes after value"}
	}
	return v, nil
}

// DecodePrefix decodes the CBOR-encoded value at the start of b and reports
// how many bytes it took; the bytes after it are not decoded. Errors are
// *DecodeError (matching ErrMalformed) with offsets relative to b. The result
// never aliases b.
func DecodePrefix(b []byte) (Value, int, error) {
	d := decoder{data: b}
	v, err := d.value(0)
	if err != nil {
		return nil, 0, err
	}
	return v, d.pos, nil
}

// items reads an array of values at depth+1.
func (d *decoder) items(depth int) ([]Value, error) {
	n, indef, err := d.array()
	if err != nil {
		return nil, err
	}
	if indef {
		out := []Value{}
		for !d.atBreak() {
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	out := make([]Value, n)
	for i := range out {
		if out[i], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pairs reads a flat key, value array of values at depth+1.
func (d *decoder) pairs(depth int) ([]Pair, error) {
	start := d.pos
	n, indef, err := d.array()
	if err != nil {
		return nil, err
	}
	if indef {
		out := []Pair{}
		for !d.atBreak() {
			var p Pair
			if p.Key, err = d.value(depth + 1); err != nil {
				return nil, err
			}
			if d.atBreak() {
				return nil, d.failAt(start, "pairs array has an odd length")
			}
			if p.Value, err = d.value(depth + 1); err != nil {
				return nil, err
			}
			out = append(out, p)
		}
		return out, nil
	}
	if n%2 != 0 {
		return nil, d.failAt(start, "pairs array has an odd length")
	}
	out := make([]Pair, n/2)
	for i := range out {
		if out[i].Key, err = d.value(depth + 1); err != nil {
			return nil, err
		}
		if out[i].Value, err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d *decoder) value(depth int) (Value, error) {
	if depth > MaxDepth {
		return nil, d.failAt(d.pos, "nested deeper than 1000 levels")
	}
	if d.pos >= len(d.data) {
		return nil, d.eof()
	}
	start := d.pos
	switch d.data[d.pos] >> 5 {
	case majorUint, majorNint:
		return d.integer()
	case majorBytes:
		b, err := d.span(majorBytes, "bytes")
		if err != nil {
			return nil, err
		}
		return Bytes(append([]byte{}, b...)), nil
	case majorText:
		s, err := d.text()
		return Str(s), err
	case majorArray:
		items, err := d.items(depth)
		return List(items), err
	case majorMap:
		return nil, d.failAt(start, "CBOR maps are not Python values (dicts use tag 40001)")
	case majorTag:
		return d.tagged(depth)
	}
	switch d.data[d.pos] {
	case cborFalse, cborTrue:
		b, err := d.bool()
		return Bool(b), err
	case cborNull:
		d.pos++
		return None{}, nil
	case cborFloat16, cborFloat32, cborFloat64:
		f, err := d.float()
		return Float(f), err
	case cborBreak:
		return nil, d.failAt(start, "unexpected break")
	}
	return nil, d.failAt(start, "unsupported simple value")
}

func (d *decoder) integer() (Value, error) {
	start := d.pos
	m, arg, indef, err := d.head()
	if err != nil {
		return nil, err
	}
	if indef {
		return nil, d.failAt(start, "indefinite-length integer")
	}
	if m == majorUint {
		return IntFromUint64(arg), nil
	}
	if arg <= math.MaxInt64 {
		return Int(-1 - int64(arg)), nil
	}
	n := new(big.Int).SetUint64(arg)
	return BigInt{Big: n.Not(n)}, nil
}

func (d *decoder) bignum(negative bool) (Value, error) {
	b, err := d.span(majorBytes, "bignum bytes")
	if err != nil {
		return nil, err
	}
	n := new(big.Int).SetBytes(b)
	if negative {
		n.Not(n) // -1 - n
	}
	if n.IsInt64() {
		return Int(n.Int64()), nil
	}
	return BigInt{Big: n}, nil
}

func (d *decoder) tagged(depth int) (Value, error) {
	start := d.pos
	_, tag, indef, err := d.head()
	if err != nil {
		return nil, err
	}
	if indef {
		return nil, d.failAt(start, "indefinite-length tag")
	}
	switch tag {
	case tagPosBignum, tagNegBignum:
		return d.bignum(tag == tagNegBignum)
	case tagTuple:
		items, err := d.items(depth)
		return Tuple(items), err
	case tagDict:
		pairs, err := d.pairs(depth)
		return Dict(pairs), err
	case tagSet:
		items, err := d.items(depth)
		return Set(items), err
	case tagFrozenSet:
		items, err := d.items(depth)
		return FrozenSet(items), err
	case tagNamedTuple:
		return d.namedTuple(depth)
	case tagInstance:
		return d.instance(depth)
	case tagClass:
		return d.class(depth)
	case tagException:
		return d.exception()
	case tagPath:
		s, err := d.text()
		return Path(s), err
	case tagDate:
		return d.date()
	case tagDateTime:
		return d.dateTime()
	case tagTime:
		return d.time()
	case tagTimeDelta:
		return d.timeDelta()
	case tagTimeZone:
		return d.timeZone()
	case tagFunction:
		return d.function()
	case tagRepr:
		s, err := d.text()
		return Opaque(s), err
	case tagCycle:
		s, err := d.text()
		return Cycle(s), err
	case tagEllipsis, tagNotImplemented:
		if !d.null() {
			return nil, d.failAt(d.pos, "Ellipsis and NotImplemented wrap null")
		}
		if tag == tagEllipsis {
			return Ellipsis{}, nil
		}
		return NotImplemented{}, nil
	case tagComplex:
		return d.complex()
	case tagDecimal:
		s, err := d.text()
		return Decimal(s), err
	case tagType:
		s, err := d.text()
		return TypeObject(s), err
	case tagBuiltin:
		s, err := d.text()
		return BuiltinFunction(s), err
	case tagModule:
		return d.module(depth)
	case tagFile:
		return d.file()
	}
	return nil, d.failAt(start, "unknown tag "+strconv.FormatUint(tag, 10))
}
