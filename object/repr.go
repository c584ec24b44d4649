package object

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Repr returns Python's repr() of v, as CPython prints it for the common
// types: 1.0, 1e+16, 'it\'s', b'\x00', (1,), set(), {'a': 1},
// Point(x=1, y=2), ValueError('bad'), PosixPath('/tmp'),
// datetime.date(2024, 1, 2), datetime.timedelta(days=1), Ellipsis.
//
// Kinds with no portable repr follow the Monty interpreter: a class instance
// prints as Name(attr=value, ...), a host function as
// <function 'name' external>, a module as <module 'name'>, an open file as
// <_io.TextIOWrapper name='path' mode='r'>. An [Opaque] or [Cycle] prints
// its text as is. Items nested deeper than [MaxDepth] print as "...", and a
// nil Value as "<nil>".
func Repr(v Value) string {
	return string(appendRepr(make([]byte, 0, 16), v, 0))
}

func appendRepr(b []byte, v Value, depth int) []byte {
	if depth > MaxDepth {
		return append(b, "..."...)
	}
	switch x := v.(type) {
	case None:
		return append(b, "None"...)
	case Bool:
		if x {
			return append(b, "True"...)
		}
		return append(b, "False"...)
	case Int:
		return strconv.AppendInt(b, int64(x), 10)
	case BigInt:
		if x.Big == nil {
			return append(b, "<nil>"...)
		}
		return x.Big.Append(b, 10)
	case Float:
		return appendFloatRepr(b, float64(x))
	case Complex:
		return appendComplexRepr(b, x)
	case Str:
		return appendStrRepr(b, string(x))
	case Bytes:
		return appendBytesRepr(b, x)
	case List:
		return append(appendItems(append(b, '['), x, depth), ']')
	case Tuple:
		b = appendItems(append(b, '('), x, depth)
		if len(x) == 1 {
			b = append(b, ',')
		}
		return append(b, ')')
	case Dict:
		b = append(b, '{')
		for i, p := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendRepr(b, p.Key, depth+1)
			b = appendRepr(append(b, ": "...), p.Value, depth+1)
		}
		return append(b, '}')
	case Set:
		if len(x) == 0 {
			return append(b, "set()"...)
		}
		return append(appendItems(append(b, '{'), x, depth), '}')
	case FrozenSet:
		if len(x) == 0 {
			return append(b, "frozenset()"...)
		}
		return append(appendItems(append(b, "frozenset({"...), x, depth), "})"...)
	case NamedTuple:
		b = append(append(b, x.TypeName...), '(')
		for i, v := range x.Values {
			if i > 0 {
				b = append(b, ", "...)
			}
			if i < len(x.Fields) {
				b = append(append(b, x.Fields[i]...), '=')
			}
			b = appendRepr(b, v, depth+1)
		}
		return append(b, ')')
	case Instance:
		b = append(append(b, x.Class.Name...), '(')
		for i, p := range x.Attrs {
			if i > 0 {
				b = append(b, ", "...)
			}
			if k, ok := p.Key.(Str); ok {
				b = append(b, k...)
			} else {
				b = appendRepr(b, p.Key, depth+1)
			}
			b = appendRepr(append(b, '='), p.Value, depth+1)
		}
		return append(b, ')')
	case ClassType:
		return append(append(append(b, "<class '"...), x.Name...), "'>"...)
	case Exception:
		b = append(append(b, x.Type...), '(')
		if x.HasMessage {
			b = appendStrRepr(b, x.Message)
		}
		return append(b, ')')
	case Path:
		return append(appendStrRepr(append(b, "PosixPath("...), string(x)), ')')
	case Date:
		return append(appendInts(append(b, "datetime.date("...), x.Year, x.Month, x.Day), ')')
	case DateTime:
		b = appendInts(append(b, "datetime.datetime("...), x.Year, x.Month, x.Day, x.Hour, x.Minute)
		b = appendSubMinute(b, x.Second, x.Microsecond)
		if x.Offset != nil {
			b = appendTimeZoneRepr(append(b, ", tzinfo="...), *x.Offset, x.TZName)
		}
		return append(b, ')')
	case Time:
		b = appendInts(append(b, "datetime.time("...), x.Hour, x.Minute)
		b = appendSubMinute(b, x.Second, x.Microsecond)
		if x.Offset != nil {
			b = appendTimeZoneRepr(append(b, ", tzinfo="...), *x.Offset, x.TZName)
		}
		if x.Fold != 0 {
			b = strconv.AppendInt(append(b, ", fold="...), int64(x.Fold), 10)
		}
		return append(b, ')')
	case TimeDelta:
		return appendTimeDeltaRepr(b, x)
	case TimeZone:
		return appendTimeZoneRepr(b, x.Offset, x.Name)
	case Function:
		return append(append(append(b, "<function '"...), x.Name...), "' external>"...)
	case Opaque:
		return append(b, x...)
	case Cycle:
		return append(b, x...)
	case Ellipsis:
		return append(b, "Ellipsis"...)
	case NotImplemented:
		return append(b, "NotImplemented"...)
	case Decimal:
		return append(appendStrRepr(append(b, "Decimal("...), string(x)), ')')
	case TypeObject:
		return append(append(append(b, "<class '"...), x...), "'>"...)
	case BuiltinFunction:
		return append(append(append(b, "<built-in function "...), x...), '>')
	case Module:
		return append(appendStrRepr(append(b, "<module "...), x.Name), '>')
	case File:
		b = append(append(append(b, '<'), fileTypeName(x.Mode)...), " name="...)
		b = appendStrRepr(b, x.Path)
		return append(appendStrRepr(append(b, " mode="...), x.Mode), '>')
	case nil:
		return append(b, "<nil>"...)
	}
	return fmt.Appendf(b, "<%T>", v) // a pointer to a value type, such as *Int
}

func appendItems(b []byte, xs []Value, depth int) []byte {
	for i, x := range xs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendRepr(b, x, depth+1)
	}
	return b
}

func appendInts(b []byte, xs ...int) []byte {
	for i, x := range xs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return b
}

// appendSubMinute adds the seconds and microseconds of a datetime or time
// repr, which CPython omits when zero.
func appendSubMinute(b []byte, second, micro int) []byte {
	if second != 0 || micro != 0 {
		b = strconv.AppendInt(append(b, ", "...), int64(second), 10)
	}
	if micro != 0 {
		b = strconv.AppendInt(append(b, ", "...), int64(micro), 10)
	}
	return b
}

func appendTimeDeltaRepr(b []byte, d TimeDelta) []byte {
	if d == (TimeDelta{}) {
		return append(b, "datetime.timedelta(0)"...)
	}
	b = append(b, "datetime.timedelta("...)
	sep := ""
	for _, f := range [...]struct {
		name string
		v    int
	}{{"days=", d.Days}, {"seconds=", d.Seconds}, {"microseconds=", d.Microseconds}} {
		if f.v != 0 {
			b = strconv.AppendInt(append(append(b, sep...), f.name...), int64(f.v), 10)
			sep = ", "
		}
	}
	return append(b, ')')
}

func appendTimeZoneRepr(b []byte, offset int, name *string) []byte {
	if offset == 0 && name == nil {
		return append(b, "datetime.timezone.utc"...)
	}
	b = appendTimeDeltaRepr(append(b, "datetime.timezone("...), NewTimeDelta(0, int64(offset), 0))
	if name != nil {
		b = appendStrRepr(append(b, ", "...), *name)
	}
	return append(b, ')')
}

func fileTypeName(mode string) string {
	binary, update, read := false, false, false
	for _, c := range mode {
		switch c {
		case 'b':
			binary = true
		case '+':
			update = true
		case 'r':
			read = true
		}
	}
	switch {
	case !binary:
		return "_io.TextIOWrapper"
	case update:
		return "_io.BufferedRandom"
	case read:
		return "_io.BufferedReader"
	}
	return "_io.BufferedWriter"
}

// appendFloatRepr formats f as CPython's repr(): the shortest digits that
// round-trip, in positional notation when the decimal exponent is in
// [-4, 16) (with ".0" added to integral values) and scientific otherwise.
func appendFloatRepr(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	exp := 0
	for i := len(sci) - 1; i >= 0; i-- {
		if sci[i] == 'e' {
			exp, _ = strconv.Atoi(string(sci[i+1:]))
			break
		}
	}
	if exp < -4 || exp >= 16 {
		return append(b, sci...) // Go's form matches Python's: 1e+16, 1.5e-07
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}

// appendComplexRepr formats c as CPython does: 1j, (1+2j), (-0-1j),
// (nan+infj), each part as a float repr without a trailing ".0".
func appendComplexRepr(b []byte, c Complex) []byte {
	if c.Real == 0 && !math.Signbit(c.Real) {
		return append(appendComplexPart(b, c.Imag, false), 'j')
	}
	b = appendComplexPart(append(b, '('), c.Real, false)
	return append(appendComplexPart(b, c.Imag, true), "j)"...)
}

func appendComplexPart(b []byte, f float64, signed bool) []byte {
	if signed && (math.IsNaN(f) || !math.Signbit(f)) {
		b = append(b, '+')
	}
	b = appendFloatRepr(b, f)
	if n := len(b); n >= 2 && b[n-2] == '.' && b[n-1] == '0' {
		b = b[:n-2]
	}
	return b
}

// appendStrRepr quotes s as CPython's repr() of a str: single quotes unless s
// contains ' and no ", short escapes for \\ \n \r \t and the quote, and \x,
// \u or \U escapes for characters str.isprintable() rejects. A byte that is
// not UTF-8 shows as the lone surrogate Python's surrogateescape error
// handler would decode it to (\udcff for 0xff).
func appendStrRepr(b []byte, s string) []byte {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b = append(b, quote)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '\\' || c == quote:
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = appendHexEscape(b, 'x', uint32(c), 2)
			default:
				b = append(b, c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1: // as Python's surrogateescape
			b = appendHexEscape(b, 'u', 0xdc00+uint32(c), 4)
		case unicode.IsPrint(r):
			b = append(b, s[i:i+size]...)
		case r <= 0xff:
			b = appendHexEscape(b, 'x', uint32(r), 2)
		case r <= 0xffff:
			b = appendHexEscape(b, 'u', uint32(r), 4)
		default:
			b = appendHexEscape(b, 'U', uint32(r), 8)
		}
		i += size
	}
	return append(b, quote)
}

// appendBytesRepr formats a bytes repr: b'...' with printable ASCII as is.
func appendBytesRepr(b []byte, s []byte) []byte {
	quote := byte('\'')
	if bytes.IndexByte(s, '\'') >= 0 && bytes.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b = append(b, 'b', quote)
	for _, c := range s {
		switch {
		case c == '\\' || c == quote:
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20 || c >= 0x7f:
			b = appendHexEscape(b, 'x', uint32(c), 2)
		default:
			b = append(b, c)
		}
	}
	return append(b, quote)
}

func appendHexEscape(b []byte, kind byte, r uint32, width int) []byte {
	const digits = "0123456789abcdef"
	b = append(b, '\\', kind)
	for shift := 4 * (width - 1); shift >= 0; shift -= 4 {
		b = append(b, digits[(r>>uint(shift))&0xf])
	}
	return b
}
