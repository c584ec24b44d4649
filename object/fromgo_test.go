package object

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type Base struct {
	ID   int    `json:"id"`
	Note string `json:"note,omitempty"`
}

type Extra struct {
	Tag string
}

type record struct {
	Base
	*Extra
	Name     string            `json:"name"`
	Skip     string            `json:"-"`
	Empty    []int             `json:"empty,omitempty"`
	Zero     time.Time         `json:"zero,omitzero"`
	Count    *int              `json:"count"`
	Tags     map[string]string `json:"tags"`
	Raw      []byte            `json:"raw"`
	Dash     int               `json:"-,"`
	private  int
	Untagged float32
}

func TestFromGoScalars(t *testing.T) {
	type myString string
	type myInt int8
	for _, tc := range []struct {
		in   any
		want Value
	}{
		{nil, None{}},
		{true, Bool(true)},
		{int(-1), Int(-1)},
		{int8(-8), Int(-8)},
		{int16(16), Int(16)},
		{int32(32), Int(32)},
		{int64(math.MinInt64), Int(math.MinInt64)},
		{uint(1), Int(1)},
		{uint8(255), Int(255)},
		{uint16(16), Int(16)},
		{uint32(math.MaxUint32), Int(math.MaxUint32)},
		{uint64(math.MaxInt64), Int(math.MaxInt64)},
		{uint64(math.MaxUint64), BigInt{new(big.Int).SetUint64(math.MaxUint64)}},
		{uintptr(7), Int(7)},
		{myInt(3), Int(3)},
		{float32(1.5), Float(1.5)},
		{2.25, Float(2.25)},
		{complex(1, 2), Complex{1, 2}},
		{complex64(complex(3, -4)), Complex{3, -4}},
		{"héllo", Str("héllo")},
		{myString("x"), Str("x")},
		{[]byte{1, 2}, Bytes{1, 2}},
		{[3]byte{1, 2, 3}, Bytes{1, 2, 3}},
		{big.NewInt(5), Int(5)},
		{*new(big.Int).Lsh(big.NewInt(1), 64), BigInt{new(big.Int).Lsh(big.NewInt(1), 64)}},
		{(*big.Int)(nil), None{}},
		{json.Number("12"), Int(12)},
		{json.Number("1e2"), Float(100)},
		{json.Number("123456789012345678901234567890"), BigInt{mustBig("123456789012345678901234567890")}},
		{90 * time.Second, TimeDelta{Seconds: 90}},
		{(*int)(nil), None{}},
		{ptr(ptr(3)), Int(3)},
		{Str("v"), Str("v")},
		{Value(List{Int(1)}), List{Int(1)}},
		{[]any{1, "a", nil, []any{true}}, List{Int(1), Str("a"), None{}, List{Bool(true)}}},
		{[]string(nil), List{}},
		{[]Value{Int(1), Str("x")}, List{Int(1), Str("x")}},
		{[2]float64{1, 2}, List{Float(1), Float(2)}},
		{struct{}{}, Dict{}},
	} {
		got, err := FromGo(tc.in)
		require.NoError(t, err, "%T", tc.in)
		assert.True(t, Equal(tc.want, got), "%T: want %s, got %s", tc.in, Repr(tc.want), Repr(got))
	}
}

func TestFromGoTime(t *testing.T) {
	tm := time.Date(2024, 5, 6, 7, 8, 9, 10000, time.FixedZone("X", -3600))
	got, err := FromGo(tm)
	require.NoError(t, err)
	assert.Equal(t, "datetime.datetime(2024, 5, 6, 7, 8, 9, 10, tzinfo=datetime.timezone(datetime.timedelta(days=-1, seconds=82800), 'X'))", Repr(got))
	got, err = FromGo(&tm)
	require.NoError(t, err)
	assert.Equal(t, KindDateTime, got.Kind())
}

func TestFromGoMaps(t *testing.T) {
	got, err := FromGo(map[string]int{"b": 2, "a": 1, "c": 3})
	require.NoError(t, err)
	assert.Equal(t, "{'a': 1, 'b': 2, 'c': 3}", Repr(got))

	got, err = FromGo(map[int]string{10: "x", -1: "y", 2: "z"})
	require.NoError(t, err)
	assert.Equal(t, "{-1: 'y', 2: 'z', 10: 'x'}", Repr(got))

	got, err = FromGo(map[uint64]bool{math.MaxUint64: true, 1: false})
	require.NoError(t, err)
	assert.Equal(t, "{1: False, 18446744073709551615: True}", Repr(got))

	got, err = FromGo(map[any]any{"s": 1, 2: 2, true: 3, 1.5: 4, false: 5, "a": 6, 0.5: 7, -3: 8})
	require.NoError(t, err)
	assert.Equal(t, "{False: 5, True: 3, -3: 8, 2: 2, 0.5: 7, 1.5: 4, 'a': 6, 's': 1}", Repr(got))

	got, err = FromGo(map[uint64]int{math.MaxUint64: 1, math.MaxUint64 - 1: 2})
	require.NoError(t, err)
	assert.Equal(t, "{18446744073709551614: 2, 18446744073709551615: 1}", Repr(got))

	got, err = FromGo(map[netip.Addr]int{netip.MustParseAddr("10.0.0.2"): 2, netip.MustParseAddr("10.0.0.1"): 1})
	require.NoError(t, err)
	assert.Equal(t, "{'10.0.0.1': 1, '10.0.0.2': 2}", Repr(got))

	got, err = FromGo(map[string]any(nil))
	require.NoError(t, err)
	assert.Equal(t, Dict{}, got)
}

func TestFromGoStruct(t *testing.T) {
	r := record{Base: Base{ID: 7}, Name: "n", Skip: "s", Raw: []byte("r"), Dash: 4, private: 1, Untagged: 0.5,
		Tags: map[string]string{"k": "v"}}
	got, err := FromGo(r)
	require.NoError(t, err)
	assert.Equal(t, "{'id': 7, 'name': 'n', 'count': None, 'tags': {'k': 'v'}, 'raw': b'r', '-': 4, 'Untagged': 0.5}", Repr(got))

	r.Extra = &Extra{Tag: "t"}
	r.Note = "note"
	r.Empty = []int{1}
	r.Zero = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	r.Count = ptr(2)
	got, err = FromGo(&r)
	require.NoError(t, err)
	assert.Equal(t, "{'id': 7, 'note': 'note', 'Tag': 't', 'name': 'n', 'empty': [1], "+
		"'zero': datetime.datetime(2000, 1, 1, 0, 0, tzinfo=datetime.timezone.utc), 'count': 2, "+
		"'tags': {'k': 'v'}, 'raw': b'r', '-': 4, 'Untagged': 0.5}", Repr(got))
}

func TestFromGoOmitEmpty(t *testing.T) {
	type opts struct {
		B  bool           `json:"b,omitempty"`
		F  float64        `json:"f,omitempty"`
		U  uint           `json:"u,omitempty"`
		P  *int           `json:"p,omitempty"`
		I  any            `json:"i,omitempty"`
		M  map[string]int `json:"m,omitempty"`
		A  [0]int         `json:"a,omitempty"`
		S  struct{}       `json:"s,omitempty"`
		Z  struct{}       `json:"z,omitzero"`
		ZI int            `json:"zi,omitempty,omitzero"`
	}
	got, err := FromGo(opts{})
	require.NoError(t, err)
	assert.Equal(t, "{'s': {}}", Repr(got), "omitempty never omits a struct")
	got, err = FromGo(opts{B: true, F: 1, U: 1, P: new(int), I: 0, M: map[string]int{"k": 1}, ZI: 1})
	require.NoError(t, err)
	assert.Equal(t, "{'b': True, 'f': 1.0, 'u': 1, 'p': 0, 'i': 0, 'm': {'k': 1}, 's': {}, 'zi': 1}", Repr(got))
}

func TestFromGoFieldConflicts(t *testing.T) {
	type A struct{ X, Y int }
	type B struct {
		X int
		Y int `json:"Y"`
	}
	type C struct {
		A
		B
		Z int
	}
	type D struct {
		C
		Z string // shallower: wins over C.Z
	}
	got, err := FromGo(D{C: C{A: A{X: 1, Y: 2}, B: B{X: 3, Y: 4}, Z: 5}, Z: "d"})
	require.NoError(t, err)
	// X is ambiguous (dropped); B.Y is tagged so it wins over A.Y.
	assert.Equal(t, "{'Y': 4, 'Z': 'd'}", Repr(got))

	type Node struct {
		*Node
		V int
	}
	got, err = FromGo(Node{Node: &Node{V: 1}, V: 2})
	require.NoError(t, err)
	assert.Equal(t, "{'V': 2}", Repr(got))

	type hidden struct{ In int }
	type Outer struct {
		hidden
		*Extra
	}
	got, err = FromGo(Outer{hidden: hidden{In: 1}})
	require.NoError(t, err)
	assert.Equal(t, "{'In': 1}", Repr(got))
}

func TestFromGoErrors(t *testing.T) {
	type withChan struct {
		C chan int `json:"c"`
	}
	type cyclic struct {
		Next *cyclic
	}
	loop := &cyclic{}
	loop.Next = loop
	loopSlice := []any{nil}
	loopSlice[0] = loopSlice

	for _, tc := range []struct {
		name   string
		in     any
		path   string
		goType string
		reason string
	}{
		{"chan", make(chan int), "", "chan int", "unsupported type"},
		{"func", func() {}, "", "func()", "unsupported type"},
		{"struct field", withChan{}, ".C", "chan int", "unsupported type"},
		{"slice item", []any{1, make(chan int)}, "[1]", "chan int", "unsupported type"},
		{"typed slice item", []func(){nil}, "[0]", "func()", "unsupported type"},
		{"map value", map[string]any{"k": func() {}}, "[k]", "func()", "unsupported type"},
		{"map key", map[[2]int]int{{1, 2}: 3}, "", "[2]int", "unsupported map key type"},
		{"invalid utf-8", "\xff", "", "string", "string is not valid UTF-8"},
		{"invalid utf-8 key", map[string]int{"\xff": 1}, "", "string", "string is not valid UTF-8"},
		{"text marshaler key", map[badKey]int{{}: 1}, "", "object.badKey", "map key: no"},
		{"json.Number", json.Number("x"), "", "json.Number", "not a number: x"},
		{"json.Number float", json.Number("1.x"), "", "json.Number", "not a number: 1.x"},
		{"cycle", loop, "", "", "nested deeper than 1000 levels (does it contain itself?)"},
		{"slice cycle", loopSlice, "", "", "nested deeper than 1000 levels (does it contain itself?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromGo(tc.in)
			var ge *GoValueError
			require.ErrorAs(t, err, &ge)
			if tc.name == "cycle" || tc.name == "slice cycle" {
				assert.Equal(t, tc.reason, ge.Reason)
				return
			}
			assert.Equal(t, tc.path, ge.Path)
			assert.Equal(t, tc.goType, ge.GoType)
			assert.Equal(t, tc.reason, ge.Reason)
		})
	}
	_, err := FromGo(make(chan int))
	assert.EqualError(t, err, "object: cannot convert Go chan int to a Python value: unsupported type")
	_, err = FromGo([]any{make(chan int)})
	assert.EqualError(t, err, "object: cannot convert Go chan int at [0] to a Python value: unsupported type")
}

type badKey struct{}

func (badKey) MarshalText() ([]byte, error) { return nil, errors.New("no") }
