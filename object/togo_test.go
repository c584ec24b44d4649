package object

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToGo(t *testing.T) {
	tm := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, tc := range []struct {
		in   Value
		want any
	}{
		{None{}, nil},
		{Bool(true), true},
		{Int(-3), int64(-3)},
		{BigInt{mustBig("99999999999999999999")}, mustBig("99999999999999999999")},
		{Float(1.5), 1.5},
		{Complex{1, 2}, complex(1, 2)},
		{Str("s"), "s"},
		{Path("/p"), "/p"},
		{Decimal("1.5"), "1.5"},
		{Bytes("b"), []byte("b")},
		{List{Int(1), Str("a")}, []any{int64(1), "a"}},
		{Tuple{}, []any{}},
		{Set{Int(1)}, []any{int64(1)}},
		{FrozenSet{Int(1)}, []any{int64(1)}},
		{NamedTuple{TypeName: "T", Fields: []string{"a"}, Values: []Value{Int(1)}}, []any{int64(1)}},
		{Dict{{Str("a"), List{Int(1)}}}, map[string]any{"a": []any{int64(1)}}},
		{Dict{{Int(1), Str("x")}, {Str("k"), None{}}, {None{}, Float(2)}}, map[any]any{int64(1): "x", "k": nil, nil: 2.0}},
		{Instance{Class: point, Attrs: []Pair{{Str("x"), Int(1)}}}, map[string]any{"x": int64(1)}},
		{DateTimeFromTime(tm), tm},
		{Date{2024, 1, 2}, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)},
		{TimeDelta{Days: 1, Microseconds: 1}, 24*time.Hour + time.Microsecond},
		{Exception{Type: "E"}, Exception{Type: "E"}},
		{Ellipsis{}, Ellipsis{}},
		{Time{Hour: 1}, Time{Hour: 1}},
	} {
		got, err := ToGo(tc.in)
		require.NoError(t, err, Repr(tc.in))
		assert.Equal(t, tc.want, got, Repr(tc.in))
	}
	loc, err := ToGo(TimeZone{Offset: 3600})
	require.NoError(t, err)
	assert.Equal(t, "UTC+01:00", loc.(*time.Location).String())

	b := Bytes("abc")
	got, err := ToGo(b)
	require.NoError(t, err)
	got.([]byte)[0] = 'x'
	assert.Equal(t, Bytes("abc"), b, "ToGo copies bytes")
}

func TestToGoErrors(t *testing.T) {
	for _, tc := range []struct {
		in   Value
		path string
		msg  string
	}{
		{Dict{{Tuple{Int(1)}, Int(1)}}, ".keys()[0]", "cannot convert tuple to comparable map key at .keys()[0]"},
		{Dict{{Int(1), TimeDelta{Days: 1 << 30}}}, "[1]", "cannot convert timedelta to time.Duration at [1]: out of range"},
		{Dict{{Str("a"), List{TimeDelta{Days: 1 << 30}}}}, "['a'][0]", "cannot convert timedelta to time.Duration at ['a'][0]: out of range"},
		{Dict{{Int(1), None{}}, {List{BigInt{}}, None{}}}, ".keys()[1][0]", "cannot convert int to *big.Int at .keys()[1][0]: nil *big.Int"},
	} {
		_, err := ToGo(tc.in)
		var ce *ConversionError
		require.ErrorAs(t, err, &ce, Repr(tc.in))
		assert.Equal(t, tc.path, ce.Path)
		assert.EqualError(t, err, tc.msg)
	}
}
