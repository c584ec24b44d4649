package object

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUUIDString(t *testing.T) {
	assert.Equal(t, "12345678-9abc-def0-0123-456789abcdef", uuidA.String())
	assert.Equal(t, "00000000-0000-0000-0000-000000000000", UUID{}.String())
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "NoneType", None{}.Kind().String())
	assert.Equal(t, "int", BigInt{}.Kind().String())
	assert.Equal(t, "dict", Dict{}.Kind().String())
	assert.Equal(t, "invalid", KindInvalid.String())
	assert.Equal(t, "invalid", Kind(200).String())
	for _, s := range sampleValues() {
		assert.NotEqual(t, "invalid", s.v.Kind().String(), s.name)
	}
}

func TestFieldHelpers(t *testing.T) {
	nt := NamedTuple{TypeName: "P", Fields: []string{"x", "y"}, Values: []Value{Int(1)}}
	v, ok := nt.Field("x")
	assert.True(t, ok)
	assert.Equal(t, Int(1), v)
	_, ok = nt.Field("y") // no value for it
	assert.False(t, ok)

	in := Instance{Class: point, Attrs: []Pair{{Int(1), Int(2)}, {Str("x"), Str("a")}}}
	v, ok = in.Field("x")
	assert.True(t, ok)
	assert.Equal(t, Str("a"), v)
	_, ok = in.Field("z")
	assert.False(t, ok)

	d := Dict{{Str("a"), Int(1)}, {Tuple{Int(1)}, Int(2)}}
	v, ok = d.Get(Tuple{Int(1)})
	assert.True(t, ok)
	assert.Equal(t, Int(2), v)
	_, ok = d.Get(Str("b"))
	assert.False(t, ok)
}

func TestExceptionError(t *testing.T) {
	var err error = Exception{Type: "ValueError", Message: "bad", HasMessage: true}
	assert.Equal(t, "ValueError: bad", err.Error())
	assert.Equal(t, "KeyError", Exception{Type: "KeyError"}.Error())
}

func TestIntFromBig(t *testing.T) {
	n := big.NewInt(7)
	assert.Equal(t, Int(7), IntFromBig(n))
	huge := new(big.Int).Lsh(big.NewInt(1), 100)
	v := IntFromBig(huge).(BigInt)
	huge.SetInt64(0)
	assert.Equal(t, "1267650600228229401496703205376", Repr(v), "IntFromBig copies")
}

func TestNewTimeDelta(t *testing.T) {
	for _, tc := range []struct {
		d, s, us int64
		want     TimeDelta
	}{
		{0, 0, 0, TimeDelta{}},
		{0, -1, 0, TimeDelta{Days: -1, Seconds: 86399}},
		{0, 0, -1, TimeDelta{Days: -1, Seconds: 86399, Microseconds: 999999}},
		{1, 86400, 1000000, TimeDelta{Days: 2, Seconds: 1}},
		{0, 0, 3 * 86400 * 1000000, TimeDelta{Days: 3}},
		{-1, 90000, -2500000, TimeDelta{Days: 0, Seconds: 3597, Microseconds: 500000}},
	} {
		assert.Equal(t, tc.want, NewTimeDelta(tc.d, tc.s, tc.us))
	}
}

func TestDurationConversions(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond, -time.Microsecond, 90 * time.Minute,
		-36*time.Hour - 5*time.Microsecond, math.MaxInt64 / 1000 * 1000, math.MinInt64 / 1000 * 1000} {
		td := TimeDeltaFromDuration(d)
		back, ok := td.GoDuration()
		assert.True(t, ok, d)
		assert.Equal(t, d, back)
	}
	assert.Equal(t, TimeDelta{}, TimeDeltaFromDuration(999*time.Nanosecond), "truncates")
	assert.Equal(t, TimeDelta{Days: -1, Seconds: 86399, Microseconds: 999999}, TimeDeltaFromDuration(-1999*time.Nanosecond))
	for _, td := range []TimeDelta{{Days: 106752}, {Days: -106753}, {Days: -106752}, {Days: 106751, Seconds: 86399}, {Days: 999999999}, {Days: -999999999}} {
		_, ok := td.GoDuration()
		assert.False(t, ok, td)
	}
}

func TestTimeConversions(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	tm := time.Date(2024, 2, 29, 13, 14, 15, 123456789, cet)
	dt := DateTimeFromTime(tm)
	assert.Equal(t, "datetime.datetime(2024, 2, 29, 13, 14, 15, 123456, tzinfo=datetime.timezone(datetime.timedelta(seconds=3600), 'CET'))", Repr(dt))
	assert.True(t, dt.GoTime().Equal(tm.Truncate(time.Microsecond)))
	name, off := dt.GoTime().Zone()
	assert.Equal(t, "CET", name)
	assert.Equal(t, 3600, off)

	utc := DateTimeFromTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	assert.Equal(t, "datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)", Repr(utc))
	assert.Same(t, time.UTC, utc.GoTime().Location())

	unnamed := DateTimeFromTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.FixedZone("", -7200)))
	assert.Nil(t, unnamed.TZName)
	assert.True(t, Equal(unnamed, DateTimeFromTime(unnamed.GoTime())))

	naive := DateTime{Year: 2024, Month: 3, Day: 4, Hour: 5}
	assert.Equal(t, time.Date(2024, 3, 4, 5, 0, 0, 0, time.UTC), naive.GoTime())
	assert.Equal(t, time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC), Date{2024, 3, 4}.GoTime())
}

func TestTimeZoneLocation(t *testing.T) {
	assert.Same(t, time.UTC, TimeZone{}.Location())
	loc := TimeZone{Offset: -16200}.Location()
	name, off := time.Date(2024, 1, 1, 0, 0, 0, 0, loc).Zone()
	assert.Equal(t, "UTC-04:30", name)
	assert.Equal(t, -16200, off)
	name, _ = time.Date(2024, 1, 1, 0, 0, 0, 0, TimeZone{Name: ptr("Z")}.Location()).Zone()
	assert.Equal(t, "Z", name)
	require.NotNil(t, TimeZone{Offset: 60}.Location())
}

// ParseUUID reads back what String writes, and nothing else.
func TestParseUUID(t *testing.T) {
	u := NameUUID("test", "x")
	got, err := ParseUUID(u.String())
	if err != nil || got != u {
		t.Fatalf("ParseUUID(%s) = %v, %v", u, got, err)
	}
	for _, bad := range []string{"", u.String()[:35], strings.ReplaceAll(u.String(), "-", ""), "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz", u.String() + "0"} {
		if _, err := ParseUUID(bad); err == nil {
			t.Errorf("ParseUUID(%q) accepted", bad)
		}
	}
}
