package object

import (
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func roundTrip(t *testing.T, v Value) Value {
	t.Helper()
	b, err := Encode(v)
	require.NoError(t, err)
	got, err := Decode(b)
	require.NoError(t, err)
	assert.True(t, Equal(v, got), "round trip of %s gave %s", Repr(v), Repr(got))
	return got
}

func TestRoundTripSamples(t *testing.T) {
	for _, s := range sampleValues() {
		t.Run(s.name, func(t *testing.T) { roundTrip(t, s.v) })
	}
}

func TestRoundTripNested(t *testing.T) {
	var all List
	for _, s := range sampleValues() {
		all = append(all, s.v)
	}
	v := Dict{
		{Str("all"), all},
		{Str("tuple"), Tuple{all, Set{all[3]}}},
		{Tuple{Int(1), Str("k")}, Instance{Class: point, Attrs: []Pair{{Str("items"), all}}}},
		{Str("named"), NamedTuple{TypeName: "T", Fields: []string{"a"}, Values: []Value{all}}},
		{Str("module"), Module{Name: "m", Attrs: []Pair{{Str("x"), all}}}},
	}
	roundTrip(t, v)
}

func TestRoundTripFloatBits(t *testing.T) {
	for _, bits := range []uint64{
		0, 1 << 63, 0x7ff0000000000000, 0xfff0000000000000,
		0x7ff8000000000000, 0x7ff8000000000001, 0x7ff0000000000001, // quiet and signalling NaNs
		0xfff8deadbeef0001, 0x000fffffffffffff, 0x7fefffffffffffff,
	} {
		got := roundTrip(t, Float(math.Float64frombits(bits)))
		assert.Equal(t, bits, math.Float64bits(float64(got.(Float))))
		got = roundTrip(t, Complex{Real: math.Float64frombits(bits), Imag: math.Float64frombits(^bits)})
		assert.Equal(t, ^bits, math.Float64bits(got.(Complex).Imag))
	}
}

func TestIntBoundaries(t *testing.T) {
	for _, tc := range []struct {
		s    string
		kind Kind
		hex  string
	}{
		{"9223372036854775807", KindInt, "1b7fffffffffffffff"},
		{"-9223372036854775808", KindInt, "3b7fffffffffffffff"},
		{"9223372036854775808", KindBigInt, "c2488000000000000000"},
		{"-9223372036854775809", KindBigInt, "c3488000000000000000"},
	} {
		v := IntFromBig(mustBig(tc.s))
		assert.Equal(t, tc.kind, v.Kind(), tc.s)
		b, err := Encode(v)
		require.NoError(t, err)
		assert.Equal(t, tc.hex, hex.EncodeToString(b))
		assert.Equal(t, tc.s, Repr(roundTrip(t, v)))
	}
}

func TestEncodeBigIntInsideInt64(t *testing.T) {
	b, err := Encode(BigInt{big.NewInt(-5)})
	require.NoError(t, err)
	assert.Equal(t, "24", hex.EncodeToString(b))
}

func TestIntFromUint64(t *testing.T) {
	assert.Equal(t, Int(math.MaxInt64), IntFromUint64(math.MaxInt64))
	assert.Equal(t, "18446744073709551615", Repr(IntFromUint64(math.MaxUint64)))
}

func TestAppendEncode(t *testing.T) {
	dst := []byte{0xaa}
	out, err := AppendEncode(dst, List{Int(1)})
	require.NoError(t, err)
	assert.Equal(t, []byte{0xaa, 0x81, 0x01}, out)

	out, err = AppendEncode(dst, List{Str("ok"), Str("\xff")})
	require.Error(t, err)
	assert.Equal(t, []byte{0xaa}, out, "length unchanged on error")
}

func TestDecodePrefix(t *testing.T) {
	in := mustHex(t, "820102"+"f6ff")
	v, n, err := DecodePrefix(in)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, List{Int(1), Int(2)}, v)

	_, n, err = DecodePrefix(in[3:4])
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	_, _, err = DecodePrefix(in[:2])
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestDecodeDoesNotAlias(t *testing.T) {
	in := mustHex(t, "824301020363616263")
	v, err := Decode(in)
	require.NoError(t, err)
	for i := range in {
		in[i] = 0
	}
	assert.Equal(t, List{Bytes{1, 2, 3}, Str("abc")}, v)
}

func TestDecodeErrorOffset(t *testing.T) {
	_, err := Decode(mustHex(t, "8301"+"02"+"a0"))
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 3, de.Offset)
	assert.Equal(t, "object: malformed CBOR at byte 3: CBOR maps are not Python values (dicts use tag 40001)", err.Error())

	_, err = Decode(mustHex(t, "0102"))
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 1, de.Offset)
}

// TestDepthLimit checks the level counting of docs/values.md: the items of a
// container are one level deeper, an instance's class too.
func TestDepthLimit(t *testing.T) {
	deepList := func(n int, inner Value) Value {
		v := inner
		for range n {
			v = List{v}
		}
		return v
	}
	ok := deepList(MaxDepth, Int(1)) // the int is at level 1000
	roundTrip(t, ok)

	tooDeep := deepList(MaxDepth+1, Int(1))
	_, err := Encode(tooDeep)
	var ee *EncodeError
	require.ErrorAs(t, err, &ee)
	assert.ErrorIs(t, err, ErrInvalidValue)
	assert.Equal(t, "nested deeper than 1000 levels", ee.Reason)
	assert.Equal(t, strings.Repeat("[0]", MaxDepth+1), ee.Path)

	// An instance at level 999 has its class at 1000 and the class's
	// attributes at 1001.
	inst := Instance{Class: ClassType{Name: "C", Attrs: []Pair{{Str("a"), Int(1)}}}}
	_, err = Encode(deepList(MaxDepth-1, inst))
	require.ErrorAs(t, err, &ee)
	assert.True(t, strings.HasSuffix(ee.Path, "[0].__class__.keys()[0]"), ee.Path)
	_, err = Encode(deepList(MaxDepth, Instance{Class: ClassType{Name: "C"}}))
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, strings.Repeat("[0]", MaxDepth)+".__class__", ee.Path)
	roundTrip(t, deepList(MaxDepth-2, inst))
	b, err := Encode(deepList(MaxDepth-2, inst))
	require.NoError(t, err)
	_, err = Decode(append(mustHex(t, "81"), b...))
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "nested deeper than 1000 levels", de.Reason)
}

func TestEncodeErrors(t *testing.T) {
	bad := Str("\xffbad")
	for _, tc := range []struct {
		name   string
		v      Value
		path   string
		reason string
	}{
		{"nil", nil, "", "nil Value"},
		{"nil in list", List{Int(1), nil}, "[1]", "nil Value"},
		{"pointer value", List{new(Int)}, "[0]", "unsupported Value type *object.Int"},
		{"nil big", BigInt{}, "", "BigInt holds a nil *big.Int"},
		{"str", bad, "", "text is not valid UTF-8"},
		{"dict value", Dict{{Str("k"), bad}}, "['k']", "text is not valid UTF-8"},
		{"dict key", Dict{{Int(0), None{}}, {bad, None{}}}, ".keys()[1]", "text is not valid UTF-8"},
		{"instance attr", Instance{Class: point, Attrs: []Pair{{Str("x"), bad}}}, ".x", "text is not valid UTF-8"},
		{"instance class name", Instance{Class: ClassType{Name: string(bad)}}, ".__class__.__name__", "text is not valid UTF-8"},
		{"module attr key", Module{Name: "m", Attrs: []Pair{{Int(1), bad}}}, "[1]", "text is not valid UTF-8"},
		{"module name", Module{Name: string(bad)}, "", "text is not valid UTF-8"},
		{"named tuple counts", NamedTuple{TypeName: "T", Fields: []string{"a"}}, "", "named tuple has 1 fields but 0 values"},
		{"named tuple value", NamedTuple{TypeName: "T", Fields: []string{"a"}, Values: []Value{bad}}, ".a", "text is not valid UTF-8"},
		{"named tuple type", NamedTuple{TypeName: string(bad)}, "", "text is not valid UTF-8"},
		{"named tuple field", NamedTuple{TypeName: "T", Fields: []string{string(bad)}, Values: []Value{None{}}}, "", "text is not valid UTF-8"},
		{"exception type", Exception{Type: string(bad)}, "", "text is not valid UTF-8"},
		{"exception message", Exception{Type: "E", Message: string(bad), HasMessage: true}, "", "text is not valid UTF-8"},
		{"path", Path(bad), "", "text is not valid UTF-8"},
		{"datetime tz", DateTime{TZName: ptr(string(bad))}, "", "text is not valid UTF-8"},
		{"time tz", Time{TZName: ptr(string(bad))}, "", "text is not valid UTF-8"},
		{"timezone name", TimeZone{Name: ptr(string(bad))}, "", "text is not valid UTF-8"},
		{"function name", Function{Name: string(bad)}, "", "text is not valid UTF-8"},
		{"function doc", Function{Name: "f", Doc: ptr(string(bad))}, "", "text is not valid UTF-8"},
		{"opaque", Opaque(bad), "", "text is not valid UTF-8"},
		{"file path", File{Path: string(bad)}, "", "text is not valid UTF-8"},
		{"file mode", File{Path: "p", Mode: string(bad)}, "", "text is not valid UTF-8"},
		{"tuple item", Tuple{None{}, Set{FrozenSet{bad}}}, "[1][0][0]", "text is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Encode(tc.v)
			var ee *EncodeError
			require.ErrorAs(t, err, &ee)
			assert.True(t, errors.Is(err, ErrInvalidValue))
			assert.Equal(t, tc.path, ee.Path)
			assert.Equal(t, tc.reason, ee.Reason)
			msg := "object: cannot encode value"
			if tc.path != "" {
				msg += " at " + tc.path
			}
			assert.Equal(t, msg+": "+tc.reason, err.Error())
		})
	}
}

// TestEncodeCyclic checks that a list stored inside itself fails instead of
// recursing forever.
func TestEncodeCyclic(t *testing.T) {
	l := make(List, 1)
	l[0] = l
	_, err := Encode(l)
	assert.ErrorIs(t, err, ErrInvalidValue)
	assert.Contains(t, Repr(l), "[[...]]")
	assert.False(t, Equal(l, l))
	assert.False(t, JSONCompatible(l))
	_, err = ToJSON(l)
	assert.ErrorIs(t, err, ErrNotJSON)
	_, err = ToGo(l)
	var ce *ConversionError
	assert.ErrorAs(t, err, &ce)
	var dst any
	assert.ErrorAs(t, Into(l, &dst), &ce)
	var nested [][]any
	assert.ErrorAs(t, Into(l, &nested), &ce)
}

// TestDecodeStrUTF8 pins the policy: Str is UTF-8 on the wire, both ways.
func TestDecodeStrUTF8(t *testing.T) {
	for _, h := range []string{"61ff", "62c0af", "63eda080"} { // invalid, overlong, surrogate
		_, err := Decode(mustHex(t, h))
		var de *DecodeError
		require.ErrorAs(t, err, &de, h)
		assert.Equal(t, "text is not valid UTF-8", de.Reason)
	}
	for _, h := range []string{"d99c4861ff", "d99c4e8261fff6"} { // in a Path, in a function name
		_, err := Decode(mustHex(t, h))
		require.ErrorIs(t, err, ErrMalformed, h)
	}
}

func TestDecodeShapeErrors(t *testing.T) {
	uuid := "50" + strings.Repeat("00", 16)
	pad := strings.Repeat("f6", 16)
	for _, tc := range []struct{ name, hex, reason string }{
		{"path not text", "d99c4801", "expected text"},
		{"named tuple type not text", "d99c448301" + pad, "expected text"},
		{"class not an array", "d99c4601", "expected array"},
		{"uuid not bytes", "d99c46856143" + "00" + pad, "expected uuid bytes"},
		{"class name not text", "d99c468501" + pad, "expected text"},
		{"class second flag", "d99c46856143" + uuid + "f4f6", "expected bool"},
		{"class attrs", "d99c46856143" + uuid + "f4f400", "expected array"},
		{"class too long", "d99c469f6143" + uuid + "f4f48001ff", "indefinite-length array has too many items"},
		{"truncated class", "d99c469f6143", "unexpected end of input"},
		{"instance not an array", "d99c4500", "expected array"},
		{"instance class wrong tag", "d99c4583d99c4080", "instance must start with its class"},
		{"instance class truncated", "d99c459f", "unexpected end of input"},
		{"instance uuid", "d99c4583d99c46856143" + uuid + "f4f480" + "4100", "uuid is not 16 bytes"},
		{"instance attrs", "d99c4583d99c46856143" + uuid + "f4f480" + uuid + "81f6", "pairs array has an odd length"},
		{"named tuple not an array", "d99c44f6", "expected array"},
		{"named tuple fields not an array", "d99c44836154f6", "expected array"},
		{"named tuple values not an array", "d99c4483615480f6", "expected array"},
		{"named tuple value", "d99c44836154816161" + "81ff", "unexpected break"},
		{"exception message", "d99c4782614501", "expected text"},
		{"exception not an array", "d99c4700", "expected array"},
		{"datetime tz name", "d99c4a89010101010101010001", "expected text"},
		{"datetime offset", "d99c4a8901010101010101f4f6", "expected integer"},
		{"datetime field", "d99c4a8901f6" + pad, "expected integer"},
		{"datetime not an array", "d99c4a00", "expected array"},
		{"time fold", "d99c4b8701010101f6f6f6", "expected integer"},
		{"time tz name", "d99c4b8701010101f601" + pad, "expected text"},
		{"time offset", "d99c4b8701010101f4" + pad, "expected integer"},
		{"time field", "d99c4b87f6" + pad, "expected integer"},
		{"time not an array", "d99c4b00", "expected array"},
		{"timedelta field", "d99c4c8301f602", "expected integer"},
		{"timedelta not an array", "d99c4c00", "expected array"},
		{"timezone offset", "d99c4d82f6f6", "expected integer"},
		{"timezone name", "d99c4d820001", "expected text"},
		{"timezone not an array", "d99c4d00", "expected array"},
		{"function name", "d99c4e8201f6", "expected text"},
		{"function doc", "d99c4e82616601", "expected text"},
		{"function not an array", "d99c4e00", "expected array"},
		{"NotImplemented not wrapping null", "d99c52f5", "Ellipsis and NotImplemented wrap null"},
		{"Ellipsis truncated", "d99c51", "Ellipsis and NotImplemented wrap null"},
		{"complex truncated", "d99c5382fb00", "unexpected end of input"},
		{"complex at end", "d99c5382fb0000000000000000", "unexpected end of input"},
		{"complex imag", "d99c5382fb0000000000000000f6", "expected float"},
		{"complex not an array", "d99c5300", "expected array"},
		{"decimal", "d99c5401", "expected text"},
		{"type object", "d99c5501", "expected text"},
		{"builtin function", "d99c5601", "expected text"},
		{"repr", "d99c4f01", "expected text"},
		{"cycle", "d99c5001", "expected text"},
		{"module name", "d99c578301" + pad, "expected text"},
		{"module id", "d99c5783616d00", "expected uuid bytes"},
		{"module attrs", "d99c5783616d" + uuid + "00", "expected array"},
		{"module not an array", "d99c5700", "expected array"},
		{"file path", "d99c588301" + pad, "expected text"},
		{"file mode", "d99c5883617001", "expected text"},
		{"file not an array", "d99c5800", "expected array"},
		{"tuple not an array", "d99c4000", "expected array"},
		{"set item", "d99c4281ff", "unexpected break"},
		{"frozenset not an array", "d99c4300", "expected array"},
		{"dict key", "d99c4182ff00", "unexpected break"},
		{"dict value", "d99c418200ff", "unexpected break"},
		{"indefinite dict key", "d99c419fa0", "CBOR maps are not Python values"},
		{"indefinite dict value", "d99c419f00a0", "CBOR maps are not Python values"},
		{"indefinite list item", "9fa0", "CBOR maps are not Python values"},
		{"indefinite bytes chunk truncated", "5f44", "exceeds the input"},
		{"indefinite bytes chunk head", "5f", "unexpected end of input"},
		{"text head truncated", "79", "unexpected end of input"},
		{"array head truncated", "9a0000", "unexpected end of input"},
		{"float16 truncated", "f900", "unexpected end of input"},
		{"float32 truncated", "fa0000", "unexpected end of input"},
		{"bignum truncated", "c2", "unexpected end of input"},
		{"tag truncated", "d9", "unexpected end of input"},
		{"int field truncated", "d99c499f19", "unexpected end of input"},
		{"uint field truncated", "d99c589f617061701b00", "unexpected end of input"},
		{"uuid truncated", "d99c579f616d", "unexpected end of input"},
		{"bool at end", "d99c46856143" + uuid, "expected bool"},
		{"fixed shape truncated", "d99c49", "unexpected end of input"},
		{"named tuple field head truncated", "d99c4483615482", "exceeds the input"},
		{"class inside instance too deep", strings.Repeat("81", MaxDepth) + "d99c4583d99c46856143" + uuid + "f4f480" + uuid + "80", "nested deeper than 1000 levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Decode(mustHex(t, tc.hex))
			var de *DecodeError
			require.ErrorAs(t, err, &de, "decoded %s", Repr(v))
			assert.Contains(t, de.Reason, tc.reason)
			assert.LessOrEqual(t, de.Offset, len(mustHex(t, tc.hex)))
		})
	}
}
