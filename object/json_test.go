package object

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToJSON(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{None{}, "null"},
		{Bool(true), "true"},
		{Bool(false), "false"},
		{Int(-7), "-7"},
		{BigInt{mustBig("123456789012345678901234567890")}, "123456789012345678901234567890"},
		{Float(1), "1.0"},
		{Float(0.1), "0.1"},
		{Float(1e16), "1e+16"},
		{Float(1e-5), "1e-05"},
		{Float(math.Copysign(0, -1)), "-0.0"},
		{Str(""), `""`},
		{Str("a\"b\\c\n\r\t\x01\x1f\x7f é 🎉 </script>"), `"a\"b\\c\n\r\t\u0001\u001f` + "\x7f é 🎉 </script>\""},
		{List{}, "[]"},
		{List{Int(1), List{Str("a")}, None{}}, `[1,["a"],null]`},
		{Tuple{Int(1)}, "[1]"},
		{NamedTuple{TypeName: "P", Fields: []string{"x"}, Values: []Value{Int(1)}}, "[1]"},
		{Dict{}, "{}"},
		{Dict{{Str("b"), Int(1)}, {Str("a"), Dict{{Str("c"), List{}}}}}, `{"b":1,"a":{"c":[]}}`},
	} {
		got, err := ToJSON(tc.v)
		require.NoError(t, err, Repr(tc.v))
		assert.Equal(t, tc.want, string(got))
		assert.True(t, JSONCompatible(tc.v), Repr(tc.v))
	}
}

func TestToJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		v      Value
		path   string
		kind   Kind
		reason string
	}{
		{Float(math.NaN()), "", KindFloat, "float nan has no JSON form"},
		{List{Float(math.Inf(-1))}, "[0]", KindFloat, "float -inf has no JSON form"},
		{Bytes("x"), "", KindBytes, "bytes has no JSON form"},
		{Dict{{Str("a"), Set{}}}, "['a']", KindSet, "set has no JSON form"},
		{Dict{{Str("a"), None{}}, {Int(1), None{}}}, ".keys()[1]", KindInt, "dict key is not a str"},
		{Dict{{Str("\xff"), None{}}}, ".keys()[0]", KindStr, "str is not valid UTF-8"},
		{Tuple{Str("ok"), Str("\xff")}, "[1]", KindStr, "str is not valid UTF-8"},
		{NamedTuple{TypeName: "T", Fields: []string{"a"}, Values: []Value{DateTime{}}}, "[0]", KindDateTime, "datetime has no JSON form"},
		{Instance{Class: point}, "", KindInstance, "object has no JSON form"},
		{BigInt{}, "", KindBigInt, "BigInt holds a nil *big.Int"},
		{List{nil}, "[0]", KindInvalid, "nil Value"},
	} {
		_, err := ToJSON(tc.v)
		var je *JSONError
		require.ErrorAs(t, err, &je, Repr(tc.v))
		assert.True(t, errors.Is(err, ErrNotJSON))
		assert.Equal(t, tc.path, je.Path, Repr(tc.v))
		assert.Equal(t, tc.kind, je.Kind, Repr(tc.v))
		assert.Equal(t, tc.reason, je.Reason)
		assert.False(t, JSONCompatible(tc.v), Repr(tc.v))
	}
	_, err := ToJSON(List{Bytes("x")})
	assert.EqualError(t, err, "object: no JSON form at [0]: bytes has no JSON form")

	deep := Value(Int(1))
	for range MaxDepth + 1 {
		deep = List{deep}
	}
	_, err = ToJSON(deep)
	assert.ErrorIs(t, err, ErrNotJSON)
	assert.False(t, JSONCompatible(deep))
	assert.False(t, JSONCompatible(Dict{{Str("a"), Bytes{}}}))
	assert.False(t, JSONCompatible(Dict{{Int(1), None{}}}))
	assert.False(t, JSONCompatible(nil))
}

func TestFromJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // repr
	}{
		{"null", "None"},
		{" true ", "True"},
		{"false", "False"},
		{"0", "0"},
		{"-0", "0"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"9223372036854775808", "9223372036854775808"},
		{"-123456789012345678901234567890", "-123456789012345678901234567890"},
		{"1.0", "1.0"},
		{"1e2", "100.0"},
		{"1E-7", "1e-07"},
		{"-0.0", "-0.0"},
		{"1e400", "inf"},
		{"-1e400", "-inf"},
		{"1e-400", "0.0"},
		{`"a\u00e9\ud83c\udf89"`, "'aé🎉'"},
		{"[]", "[]"},
		{`[1, [2.5, "x"], {}]`, "[1, [2.5, 'x'], {}]"},
		{`{"b": 1, "a": {"c": null}}`, "{'b': 1, 'a': {'c': None}}"},
		{`{"a": 1, "b": 2, "a": 3}`, "{'a': 3, 'b': 2}"},
	} {
		v, err := FromJSON([]byte(tc.in))
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, Repr(v), tc.in)
	}

	// Many keys with repeats use the map index.
	var sb strings.Builder
	sb.WriteString("{")
	for i := range 40 {
		sb.WriteString(`"k` + string(rune('A'+i%20)) + `":` + string(rune('0'+i%10)) + ",")
	}
	sb.WriteString(`"last":true}`)
	v, err := FromJSON([]byte(sb.String()))
	require.NoError(t, err)
	d := v.(Dict)
	assert.Len(t, d, 21)
	assert.Equal(t, Pair{Str("kA"), Int(0)}, d[0])
	assert.Equal(t, Pair{Str("kT"), Int(9)}, d[19])
}

func TestFromJSONErrors(t *testing.T) {
	for in, msg := range map[string]string{
		"":          "object: invalid JSON: unexpected EOF",
		"[1,":       "object: invalid JSON: unexpected EOF",
		"{\"a\":":   "object: invalid JSON: unexpected EOF",
		"{\"a\"":    "object: invalid JSON: unexpected EOF",
		"[1] 2":     "object: invalid JSON: data after the top-level value",
		"1 x":       "object: invalid JSON: data after the top-level value",
		"[1}":       "object: invalid JSON: invalid character '}' after array element",
		"{1:2}":     "object: invalid JSON: invalid character '1'",
		"nul":       "object: invalid JSON: unexpected EOF",
		"{\"a\" 1}": "object: invalid JSON: invalid character '1' after object key",
		"[-]":       "object: invalid JSON: invalid character ']' in numeric literal",
		`{"a": [1,`: "object: invalid JSON: unexpected EOF",
	} {
		_, err := FromJSON([]byte(in))
		assert.EqualError(t, err, msg, in)
	}
	_, err := FromJSON([]byte(strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2)))
	assert.EqualError(t, err, "object: invalid JSON: nested deeper than 1000 levels")
	_, err = FromJSON([]byte(strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)))
	assert.NoError(t, err)
}

func TestJSONRoundTrip(t *testing.T) {
	for _, s := range sampleValues() {
		if !JSONCompatible(s.v) {
			continue
		}
		b, err := ToJSON(s.v)
		require.NoError(t, err, s.name)
		back, err := FromJSON(b)
		require.NoError(t, err, s.name)
		want := s.v
		switch x := s.v.(type) {
		case Tuple:
			want = List(x)
		case NamedTuple:
			want = List(x.Values)
		}
		assert.True(t, Equal(want, back), "%s: %s -> %s -> %s", s.name, Repr(s.v), b, Repr(back))
	}
}
