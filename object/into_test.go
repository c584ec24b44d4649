package object

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIntoScalars(t *testing.T) {
	var (
		b   bool
		i   int
		i8  int8
		u8  uint8
		u64 uint64
		f32 float32
		f64 float64
		c64 complex64
		s   string
		bs  []byte
		arr [3]byte
		tm  time.Time
		d   time.Duration
		n   big.Int
		np  *big.Int
		ip  *int
		a   any
		v   Value
		l   List
		err error
	)
	require.NoError(t, Into(Bool(true), &b))
	assert.True(t, b)
	require.NoError(t, Into(Int(-5), &i))
	assert.Equal(t, -5, i)
	require.NoError(t, Into(Int(-128), &i8))
	assert.Equal(t, int8(-128), i8)
	require.NoError(t, Into(Int(255), &u8))
	assert.Equal(t, uint8(255), u8)
	require.NoError(t, Into(BigInt{new(big.Int).SetUint64(math.MaxUint64)}, &u64))
	assert.Equal(t, uint64(math.MaxUint64), u64)
	require.NoError(t, Into(Float(1.5), &f32))
	assert.Equal(t, float32(1.5), f32)
	require.NoError(t, Into(Float(math.Inf(-1)), &f32))
	assert.True(t, math.IsInf(float64(f32), -1))
	require.NoError(t, Into(Int(3), &f64))
	assert.Equal(t, 3.0, f64)
	require.NoError(t, Into(BigInt{mustBig("100000000000000000000")}, &f64))
	assert.Equal(t, 1e20, f64)
	require.NoError(t, Into(Complex{1, 2}, &c64))
	assert.Equal(t, complex64(complex(1, 2)), c64)
	require.NoError(t, Into(Int(2), &c64))
	assert.Equal(t, complex64(2), c64)
	require.NoError(t, Into(Str("x"), &s))
	assert.Equal(t, "x", s)
	src := Bytes("ab")
	require.NoError(t, Into(src, &bs))
	bs[0] = 'z'
	assert.Equal(t, Bytes("ab"), src, "Into copies bytes")
	require.NoError(t, Into(Bytes("abc"), &arr))
	assert.Equal(t, [3]byte{'a', 'b', 'c'}, arr)
	require.NoError(t, Into(List{Int(1), Int(2), Int(3)}, &arr))
	assert.Equal(t, [3]byte{1, 2, 3}, arr)
	require.NoError(t, Into(DateTime{Year: 2024, Month: 1, Day: 2, Offset: ptr(0)}, &tm))
	assert.Equal(t, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), tm)
	require.NoError(t, Into(Date{2023, 5, 6}, &tm))
	assert.Equal(t, time.Date(2023, 5, 6, 0, 0, 0, 0, time.UTC), tm)
	require.NoError(t, Into(TimeDelta{Seconds: 2}, &d))
	assert.Equal(t, 2*time.Second, d)
	require.NoError(t, Into(BigInt{mustBig("-100000000000000000000")}, &n))
	assert.Equal(t, "-100000000000000000000", n.String())
	require.NoError(t, Into(Int(4), &np))
	assert.Equal(t, int64(4), np.Int64())
	require.NoError(t, Into(None{}, &np))
	assert.Nil(t, np)
	require.NoError(t, Into(Int(9), &ip))
	assert.Equal(t, 9, *ip)
	require.NoError(t, Into(None{}, &ip))
	assert.Nil(t, ip)
	require.NoError(t, Into(List{Int(1)}, &a))
	assert.Equal(t, []any{int64(1)}, a)
	require.NoError(t, Into(None{}, &a))
	assert.Nil(t, a)
	require.NoError(t, Into(Str("v"), &v))
	assert.Equal(t, Str("v"), v)
	require.NoError(t, Into(List{Int(1)}, &l))
	assert.Equal(t, List{Int(1)}, l)
	require.NoError(t, Into(Exception{Type: "E"}, &err))
	assert.EqualError(t, err, "E")
}

type point2 struct {
	X    int      `json:"x"`
	Y    *float64 `json:"y"`
	Name string
	Base
	*Extra
	Skip int `json:"-"`
}

func TestIntoStruct(t *testing.T) {
	var p point2
	require.NoError(t, Into(Dict{
		{Str("x"), Int(1)}, {Str("y"), Float(2.5)}, {Str("NAME"), Str("n")}, {Str("id"), Int(3)},
		{Str("Tag"), Str("t")}, {Str("Skip"), Int(9)}, {Str("unknown"), Int(0)}, {Int(5), Int(5)},
	}, &p))
	assert.Equal(t, 1, p.X)
	assert.Equal(t, 2.5, *p.Y)
	assert.Equal(t, "n", p.Name)
	assert.Equal(t, 3, p.ID)
	require.NotNil(t, p.Extra)
	assert.Equal(t, "t", p.Tag)
	assert.Zero(t, p.Skip)

	var q point2
	require.NoError(t, Into(Instance{Class: point, Attrs: []Pair{{Str("x"), Int(4)}}}, &q))
	assert.Equal(t, 4, q.X)
	require.NoError(t, Into(NamedTuple{TypeName: "P", Fields: []string{"x", "y"}, Values: []Value{Int(5), None{}}}, &q))
	assert.Equal(t, 5, q.X)
	assert.Nil(t, q.Y)
}

func TestIntoContainers(t *testing.T) {
	var m map[string][]int
	require.NoError(t, Into(Dict{{Str("a"), List{Int(1), Int(2)}}, {Str("b"), Tuple{}}}, &m))
	assert.Equal(t, map[string][]int{"a": {1, 2}, "b": {}}, m)

	var mi map[int]string
	require.NoError(t, Into(Dict{{Int(1), Str("x")}}, &mi))
	assert.Equal(t, map[int]string{1: "x"}, mi)

	var attrs map[string]any
	require.NoError(t, Into(Instance{Class: point, Attrs: []Pair{{Str("x"), Int(1)}}}, &attrs))
	assert.Equal(t, map[string]any{"x": int64(1)}, attrs)

	var ss [][]string
	require.NoError(t, Into(List{Set{Str("a")}, FrozenSet{}, NamedTuple{TypeName: "T", Fields: []string{"f"}, Values: []Value{Str("z")}}}, &ss))
	assert.Equal(t, [][]string{{"a"}, {}, {"z"}}, ss)

	var vs []Value
	require.NoError(t, Into(Tuple{Int(1), None{}}, &vs))
	assert.Equal(t, []Value{Int(1), None{}}, vs)
}

func TestIntoErrors(t *testing.T) {
	type target struct {
		N int `json:"n"`
	}
	for _, tc := range []struct {
		name string
		v    Value
		dst  any
		msg  string
	}{
		{"str to int", Str("1"), new(int), "cannot convert str to int"},
		{"float to int", Float(1), new(int), "cannot convert float to int"},
		{"bool to int", Bool(true), new(int), "cannot convert bool to int"},
		{"overflow", Int(300), new(int8), "cannot convert int to int8: 300 is out of range"},
		{"big to int", BigInt{mustBig("99999999999999999999")}, new(int64), "cannot convert int to int64: 99999999999999999999 is out of range"},
		{"negative to uint", Int(-1), new(uint), "cannot convert int to uint: -1 is out of range"},
		{"uint overflow", Int(256), new(uint8), "cannot convert int to uint8: 256 is out of range"},
		{"big to uint", BigInt{mustBig("-99999999999999999999")}, new(uint64), "cannot convert int to uint64: -99999999999999999999 is out of range"},
		{"str to uint", Str("1"), new(uint), "cannot convert str to uint"},
		{"float32 overflow", Float(1e300), new(float32), "cannot convert float to float32: 1e+300 is out of range"},
		{"huge int to float", BigInt{new(big.Int).Lsh(big.NewInt(1), 2000)}, new(float64), "cannot convert int to float64"},
		{"str to float", Str("1"), new(float64), "cannot convert str to float64"},
		{"nil big to float", BigInt{}, new(float64), "cannot convert int to float64"},
		{"str to complex", Str("1"), new(complex128), "cannot convert str to complex128"},
		{"complex64 overflow", Complex{1e300, 0}, new(complex64), "cannot convert complex to complex64: (1e+300+0j) is out of range"},
		{"int to bool", Int(1), new(bool), "cannot convert int to bool"},
		{"path to string", Path("/"), new(string), "cannot convert PosixPath to string"},
		{"None to string", None{}, new(string), "cannot convert NoneType to string"},
		{"nil value", nil, new(string), "cannot convert invalid to string"},
		{"list item", List{Int(1), Str("x")}, new([]int), "cannot convert str to int at [1]"},
		{"dict to slice", Dict{}, new([]int), "cannot convert dict to []int"},
		{"bytes to array length", Bytes("ab"), new([3]byte), "cannot convert bytes to [3]uint8: length 2"},
		{"list to array length", List{Int(1)}, new([2]int), "cannot convert list to [2]int: length 1"},
		{"array item", List{Str("x")}, new([1]int), "cannot convert str to int at [0]"},
		{"map value", Dict{{Str("k"), Str("v")}}, new(map[string]int), "cannot convert str to int at ['k']"},
		{"map key", Dict{{Str("k"), Int(1)}}, new(map[int]int), "cannot convert str to int at .keys()[0]"},
		{"attr value", Instance{Class: point, Attrs: []Pair{{Str("x"), Str("v")}}}, new(map[string]int), "cannot convert str to int at .x"},
		{"list to map", List{}, new(map[string]int), "cannot convert list to map[string]int"},
		{"struct field", Dict{{Str("n"), Str("v")}}, new(target), "cannot convert str to int at ['n']"},
		{"struct attr", Instance{Class: point, Attrs: []Pair{{Str("n"), Str("v")}}}, new(target), "cannot convert str to int at .n"},
		{"named tuple field", NamedTuple{TypeName: "T", Fields: []string{"n"}, Values: []Value{Str("v")}}, new(target), "cannot convert str to int at .n"},
		{"list to struct", List{}, new(target), "cannot convert list to object.target"},
		{"nested", Dict{{Str("a"), List{Dict{{Str("n"), Float(1)}}}}}, new(map[string][]target), "cannot convert float to int at ['a'][0]['n']"},
		{"str to time", Str("2024"), new(time.Time), "cannot convert str to time.Time"},
		{"int to duration", Int(1), new(time.Duration), "cannot convert int to time.Duration"},
		{"duration overflow", TimeDelta{Days: 1 << 30}, new(time.Duration), "cannot convert timedelta to time.Duration: datetime.timedelta(days=1073741824) is out of range"},
		{"str to big", Str("1"), new(big.Int), "cannot convert str to big.Int"},
		{"nil big", BigInt{}, new(*big.Int), "cannot convert int to big.Int"},
		{"interface", Int(1), new(error), "cannot convert int to error"},
		{"any with bad dict", Dict{{List{}, Int(1)}}, new(any), "cannot convert list to comparable map key at .keys()[0]"},
		{"chan", Int(1), new(chan int), "cannot convert int to chan int: unsupported Go type"},
		{"pointer target", Str("x"), new(*int), "cannot convert str to int"},
		{"wrong value type", Int(1), new(Str), "cannot convert int to object.Str"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Into(tc.v, tc.dst)
			var ce *ConversionError
			require.ErrorAs(t, err, &ce)
			assert.EqualError(t, err, tc.msg)
		})
	}
}

type recursive []recursive

func TestIntoCyclic(t *testing.T) {
	l := make(List, 1)
	l[0] = l
	var r recursive
	err := Into(l, &r)
	var ce *ConversionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "nested deeper than 1000 levels", ce.Detail)
}

func TestIntoBadDestination(t *testing.T) {
	var i int
	assert.EqualError(t, Into(Int(1), i), "object: Into needs a non-nil pointer, got int")
	assert.EqualError(t, Into(Int(1), (*int)(nil)), "object: Into needs a non-nil pointer, got *int")
	assert.EqualError(t, Into(Int(1), nil), "object: Into needs a non-nil pointer, got <nil>")
}

func TestConversionErrorPathPrefix(t *testing.T) {
	var n int
	err := Into(Str("x"), &n)
	var ce *ConversionError
	require.ErrorAs(t, err, &ce)
	ce.Path = "args[0]" + ce.Path
	assert.EqualError(t, err, "cannot convert str to int at args[0]")
	assert.Equal(t, "str", ce.Got.String())
	assert.Equal(t, "int", ce.Want)
}
