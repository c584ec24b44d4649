package object

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEqualSamples(t *testing.T) {
	samples := sampleValues()
	for i, a := range samples {
		for j, b := range samples {
			assert.Equal(t, i == j, Equal(a.v, b.v), "%s vs %s", a.name, b.name)
		}
	}
}

func TestEqual(t *testing.T) {
	nan := Float(math.NaN())
	for _, tc := range []struct {
		a, b Value
		want bool
	}{
		{nil, nil, true},
		{nil, None{}, false},
		{None{}, nil, false},
		{nan, nan, true},
		{Float(0), Float(math.Copysign(0, -1)), false},
		{Int(1), Float(1), false},
		{Int(1), Bool(true), false},
		{Int(5), BigInt{big.NewInt(5)}, true},
		{BigInt{big.NewInt(5)}, Int(5), true},
		{BigInt{big.NewInt(5)}, Int(6), false},
		{Int(5), BigInt{}, false},
		{BigInt{}, BigInt{}, false},
		{BigInt{big.NewInt(5)}, Float(5), false},
		{List{}, List(nil), true},
		{List{Int(1)}, Tuple{Int(1)}, false},
		{Set{Int(1), Int(2)}, Set{Int(2), Int(1)}, false},
		{Dict{{Str("a"), Int(1)}}, Dict{{Str("a"), Int(2)}}, false},
		{Dict{{Str("a"), Int(1)}}, Dict{{Str("b"), Int(1)}}, false},
		{Dict{{Str("a"), Int(1)}}, Dict{}, false},
		{Bytes("a"), Bytes("a"), true},
		{Bytes("a"), Str("a"), false},
		{Complex{1, math.NaN()}, Complex{1, math.NaN()}, true},
		{Complex{1, 2}, Complex{1, 3}, false},
		{Time{Offset: ptr(1)}, Time{Offset: ptr(1)}, true},
		{Time{Offset: ptr(1)}, Time{Offset: ptr(2)}, false},
		{Time{Offset: ptr(1)}, Time{}, false},
		{DateTime{TZName: ptr("a")}, DateTime{TZName: ptr("a")}, true},
		{DateTime{TZName: ptr("a")}, DateTime{TZName: ptr("b")}, false},
		{TimeZone{Name: ptr("a")}, TimeZone{Name: ptr("a")}, true},
		{Function{Name: "f", Doc: ptr("d")}, Function{Name: "f", Doc: ptr("d")}, true},
		{Function{Name: "f", Doc: ptr("d")}, Function{Name: "f"}, false},
		{NamedTuple{TypeName: "T", Fields: []string{"a"}, Values: []Value{Int(1)}},
			NamedTuple{TypeName: "T", Fields: []string{"b"}, Values: []Value{Int(1)}}, false},
		{Instance{Class: point, ID: uuidA}, Instance{Class: point, ID: uuidB}, false},
		{Instance{Class: point}, Instance{Class: ClassType{Name: "Point"}}, false},
		{Module{Name: "m"}, Module{Name: "m", Attrs: []Pair{{Str("a"), None{}}}}, false},
		{Str("a"), Path("a"), false},
		{Ellipsis{}, Ellipsis{}, true},
		{Exception{Type: "E"}, Exception{Type: "E", HasMessage: true}, false},
	} {
		assert.Equal(t, tc.want, Equal(tc.a, tc.b), "%s vs %s", Repr(tc.a), Repr(tc.b))
	}
}
