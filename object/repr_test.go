package object

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The expected strings are CPython's (checked with CPython 3.11).
func TestReprFloat(t *testing.T) {
	for f, want := range map[float64]string{
		0:                               "0.0",
		1:                               "1.0",
		-1:                              "-1.0",
		0.1:                             "0.1",
		1.0 / 3:                         "0.3333333333333333",
		123456789.125:                   "123456789.125",
		9999999999999998:                "9999999999999998.0",
		1e16:                            "1e+16",
		1.5e16:                          "1.5e+16",
		12345678901234567890:            "1.2345678901234567e+19",
		1e22:                            "1e+22",
		0.0001:                          "0.0001",
		0.00012345:                      "0.00012345",
		0.00001:                         "1e-05",
		1.5e-7:                          "1.5e-07",
		1e-100:                          "1e-100",
		1e100:                           "1e+100",
		5e-324:                          "5e-324",
		math.MaxFloat64:                 "1.7976931348623157e+308",
		2.5:                             "2.5",
		100:                             "100.0",
		-123.456:                        "-123.456",
		math.Inf(1):                     "inf",
		math.Inf(-1):                    "-inf",
		math.Copysign(0, -1):            "-0.0",
		float64(1 << 53):                "9007199254740992.0",
		0.30000000000000004:             "0.30000000000000004",
		1e15 + 0.3:                      "1000000000000000.2",
		-1e-5:                           "-1e-05",
		math.SmallestNonzeroFloat64 * 3: "1.5e-323",
	} {
		assert.Equal(t, want, Repr(Float(f)), "%b", f)
	}
	assert.Equal(t, "nan", Repr(Float(math.NaN())))
	assert.Equal(t, "nan", Repr(Float(math.Float64frombits(0xfff8000000000001))))
}

func TestReprComplex(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		c    Complex
		want string
	}{
		{Complex{0, 1}, "1j"},
		{Complex{0, -1}, "-1j"},
		{Complex{0, 0}, "0j"},
		{Complex{0, negZero}, "-0j"},
		{Complex{negZero, 1}, "(-0+1j)"},
		{Complex{1, 2}, "(1+2j)"},
		{Complex{1.5, -2.25}, "(1.5-2.25j)"},
		{Complex{1e16, 1}, "(1e+16+1j)"},
		{Complex{math.Inf(1), math.NaN()}, "(inf+nanj)"},
		{Complex{math.NaN(), math.Inf(-1)}, "(nan-infj)"},
		{Complex{0, math.Inf(1)}, "infj"},
		{Complex{1, math.Float64frombits(0xfff8000000000000)}, "(1+nanj)"},
	} {
		assert.Equal(t, tc.want, Repr(tc.c))
	}
}

func TestReprStr(t *testing.T) {
	for s, want := range map[string]string{
		"":             `''`,
		"abc":          `'abc'`,
		"it's":         `"it's"`,
		`say "hi"`:     `'say "hi"'`,
		`it's "x"`:     `'it\'s "x"'`,
		"a\\b":         `'a\\b'`,
		"\n\r\t":       `'\n\r\t'`,
		"\x00\x1f\x7f": `'\x00\x1f\x7f'`,
		"\u0080\u009f": `'\x80\x9f'`,
		"a\xffb\xc3":   `'a\udcffb\udcc3'`,
		"é ü ñ":        `'é ü ñ'`,
		"\u00a0":       `'\xa0'`,
		"\u00ad":       `'\xad'`,
		"\u200b\ufeff": `'\u200b\ufeff'`,
		"\u2028\u2029": `'\u2028\u2029'`,
		"\u3000":       `'\u3000'`,
		"日本語":          `'日本語'`,
		"🎉":            `'🎉'`,
		"\U000e0001":   `'\U000e0001'`,
		"\U0010ffff":   `'\U0010ffff'`,
		"\ue000":       `'\ue000'`,
		"\u0378":       `'\u0378'`,
		"x\u0301":      "'x\u0301'",
	} {
		assert.Equal(t, want, Repr(Str(s)), "%q", s)
	}
}

func TestReprBytes(t *testing.T) {
	for s, want := range map[string]string{
		"":          `b''`,
		"abc":       `b'abc'`,
		"it's":      `b"it's"`,
		`it's "x"`:  `b'it\'s "x"'`,
		`"`:         `b'"'`,
		"\x00\xff~": `b'\x00\xff~'`,
		"\\\n\r\t":  `b'\\\n\r\t'`,
		"\x7f\x80 ": `b'\x7f\x80 '`,
	} {
		assert.Equal(t, want, Repr(Bytes(s)), "%q", s)
	}
}

func TestReprContainers(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{List{}, "[]"},
		{List{Int(1), List{Str("a")}}, "[1, ['a']]"},
		{Tuple{}, "()"},
		{Tuple{Int(1)}, "(1,)"},
		{Tuple{Int(1), Tuple{Int(2)}}, "(1, (2,))"},
		{Dict{}, "{}"},
		{Dict{{Str("a"), Int(1)}, {Int(2), None{}}}, "{'a': 1, 2: None}"},
		{Set{}, "set()"},
		{Set{Int(1), Int(2)}, "{1, 2}"},
		{FrozenSet{}, "frozenset()"},
		{FrozenSet{Int(1)}, "frozenset({1})"},
		{NamedTuple{TypeName: "P", Fields: []string{"x", "y"}, Values: []Value{Int(1), Str("s")}}, "P(x=1, y='s')"},
		{NamedTuple{TypeName: "P", Fields: []string{"x"}, Values: []Value{Int(1), Int(2)}}, "P(x=1, 2)"},
		{Instance{Class: point, Attrs: []Pair{{Str("x"), Int(1)}, {Int(2), Int(3)}}}, "Point(x=1, 2=3)"},
		{point, "<class 'Point'>"},
		{BigInt{mustBig("-123456789012345678901234567890")}, "-123456789012345678901234567890"},
		{BigInt{}, "<nil>"},
		{List{nil}, "[<nil>]"},
		{List{new(Int)}, "[<*object.Int>]"},
	} {
		assert.Equal(t, tc.want, Repr(tc.v))
	}
}

func TestReprOthers(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{None{}, "None"},
		{Bool(true), "True"},
		{Bool(false), "False"},
		{Int(-42), "-42"},
		{Exception{Type: "ValueError", Message: "it's", HasMessage: true}, `ValueError("it's")`},
		{Exception{Type: "StopIteration"}, "StopIteration()"},
		{Path("/a/it's"), `PosixPath("/a/it's")`},
		{Date{1, 1, 1}, "datetime.date(1, 1, 1)"},
		{DateTime{Year: 2024, Month: 1, Day: 2, Second: 7}, "datetime.datetime(2024, 1, 2, 0, 0, 7)"},
		{Time{}, "datetime.time(0, 0)"},
		{Time{Microsecond: 4}, "datetime.time(0, 0, 0, 4)"},
		{Time{Hour: 1, Offset: ptr(0)}, "datetime.time(1, 0, tzinfo=datetime.timezone.utc)"},
		{Time{Hour: 1, Offset: ptr(0), TZName: ptr("UTC")}, "datetime.time(1, 0, tzinfo=datetime.timezone(datetime.timedelta(0), 'UTC'))"},
		{TimeDelta{Days: -3}, "datetime.timedelta(days=-3)"},
		{TimeDelta{Seconds: 1}, "datetime.timedelta(seconds=1)"},
		{TimeDelta{Days: 1, Microseconds: 1}, "datetime.timedelta(days=1, microseconds=1)"},
		{TimeZone{Offset: 1800}, "datetime.timezone(datetime.timedelta(seconds=1800))"},
		{TimeZone{Offset: -60}, "datetime.timezone(datetime.timedelta(days=-1, seconds=86340))"},
		{TimeZone{Name: ptr("Z")}, "datetime.timezone(datetime.timedelta(0), 'Z')"},
		{Decimal("-1E+3"), "Decimal('-1E+3')"},
		{TypeObject("ValueError"), "<class 'ValueError'>"},
		{BuiltinFunction("print"), "<built-in function print>"},
		{Function{Name: "get"}, "<function 'get' external>"},
		{Module{Name: "os"}, "<module 'os'>"},
		{Opaque("<generator object g at 0x1>"), "<generator object g at 0x1>"},
		{Cycle("{...}"), "{...}"},
		{Ellipsis{}, "Ellipsis"},
		{NotImplemented{}, "NotImplemented"},
		{File{Path: "f", Mode: "rb"}, "<_io.BufferedReader name='f' mode='rb'>"},
		{File{Path: "f", Mode: "ab"}, "<_io.BufferedWriter name='f' mode='ab'>"},
		{File{Path: "f", Mode: "r+b"}, "<_io.BufferedRandom name='f' mode='r+b'>"},
		{File{Path: "f", Mode: "w"}, "<_io.TextIOWrapper name='f' mode='w'>"},
	} {
		assert.Equal(t, tc.want, Repr(tc.v))
	}
}

func TestToStr(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{Str("it's"), "it's"},
		{Path("/tmp"), "/tmp"},
		{Decimal("1.50"), "1.50"},
		{Opaque("<lambda>"), "<lambda>"},
		{Cycle("[...]"), "[...]"},
		{Exception{Type: "ValueError", Message: "bad", HasMessage: true}, "bad"},
		{Exception{Type: "ValueError"}, ""},
		{Int(3), "3"},
		{Float(1), "1.0"},
		{List{Str("a")}, "['a']"},
		{BigInt{big.NewInt(0).Lsh(big.NewInt(1), 70)}, "1180591620717411303424"},
		{Date{2024, 1, 2}, "2024-01-02"},
		{Date{5, 1, 2}, "0005-01-02"},
		{Date{-5, 1, 2}, "-0005-01-02"}, // not a Python date, but printed plainly
		{DateTime{Year: 2024, Month: 1, Day: 2, Hour: 3, Minute: 4, Second: 5}, "2024-01-02 03:04:05"},
		{DateTime{Year: 2024, Month: 1, Day: 2, Hour: 3, Minute: 4, Second: 5, Microsecond: 6, Offset: ptr(-16230)}, "2024-01-02 03:04:05.000006-04:30:30"},
		{DateTime{Year: 2024, Month: 1, Day: 2, Offset: ptr(0), TZName: ptr("UTC")}, "2024-01-02 00:00:00+00:00"},
		{Time{Hour: 13, Minute: 5, Offset: ptr(3600)}, "13:05:00+01:00"},
		{Time{Microsecond: 10}, "00:00:00.000010"},
		{TimeDelta{}, "0:00:00"},
		{TimeDelta{Days: -1, Seconds: 86399}, "-1 day, 23:59:59"},
		{TimeDelta{Days: 2, Microseconds: 5}, "2 days, 0:00:00.000005"},
		{TimeDelta{Days: 1, Seconds: 3723}, "1 day, 1:02:03"},
		{TimeZone{}, "UTC"},
		{TimeZone{Offset: -16200}, "UTC-04:30"},
		{TimeZone{Offset: 3600, Name: ptr("CET")}, "CET"},
	} {
		assert.Equal(t, tc.want, ToStr(tc.v))
	}
}
