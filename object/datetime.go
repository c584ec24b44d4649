package object

import (
	"math"
	"time"
)

const (
	secondsPerDay = 86400
	microsPerSec  = 1000000
	// maxDurationDays bounds the days a time.Duration can hold.
	maxDurationDays = math.MaxInt64 / int64(24*time.Hour)
)

// NewTimeDelta returns the timedelta of the given parts, normalised as
// Python's timedelta constructor does, e.g. NewTimeDelta(0, -1, 0) is
// TimeDelta{Days: -1, Seconds: 86399}.
func NewTimeDelta(days, seconds, microseconds int64) TimeDelta {
	carry, micro := floorDivMod(microseconds, microsPerSec)
	carry, sec := floorDivMod(seconds+carry, secondsPerDay)
	return TimeDelta{Days: int(days + carry), Seconds: int(sec), Microseconds: int(micro)}
}

func floorDivMod(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// TimeDeltaFromDuration converts d to a timedelta, dropping any fraction of a
// microsecond (rounding toward zero).
func TimeDeltaFromDuration(d time.Duration) TimeDelta {
	return NewTimeDelta(0, 0, int64(d/time.Microsecond))
}

// GoDuration converts the timedelta to a time.Duration; ok is false when it
// is outside the about ±292 years a Duration can hold.
func (d TimeDelta) GoDuration() (dur time.Duration, ok bool) {
	days := int64(d.Days)
	if days > maxDurationDays || days < -maxDurationDays-1 {
		return 0, false
	}
	micros := (days*secondsPerDay+int64(d.Seconds))*microsPerSec + int64(d.Microseconds)
	if micros > math.MaxInt64/1000 || micros < math.MinInt64/1000 {
		return 0, false
	}
	return time.Duration(micros) * time.Microsecond, true
}

// GoTime returns midnight UTC of the date.
func (d Date) GoTime() time.Time {
	return time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC)
}

// DateTimeFromTime converts t to an aware datetime carrying t's UTC offset
// and, unless t is in UTC or its zone has no name, the zone's name ("CET").
// Nanoseconds are truncated to microseconds.
func DateTimeFromTime(t time.Time) DateTime {
	name, offset := t.Zone()
	dt := DateTime{
		Year: t.Year(), Month: int(t.Month()), Day: t.Day(),
		Hour: t.Hour(), Minute: t.Minute(), Second: t.Second(),
		Microsecond: t.Nanosecond() / 1000,
		Offset:      &offset,
	}
	if t.Location() != time.UTC && name != "" {
		dt.TZName = &name
	}
	return dt
}

// GoTime converts the datetime to a time.Time. A naive datetime is taken to
// be in UTC; an aware one gets a fixed zone with its offset and name (time.UTC
// for offset 0 without a name).
func (d DateTime) GoTime() time.Time {
	loc := time.UTC
	if d.Offset != nil {
		loc = fixedZone(*d.Offset, d.TZName, "")
	}
	return time.Date(d.Year, time.Month(d.Month), d.Day, d.Hour, d.Minute, d.Second, d.Microsecond*1000, loc)
}

// Location returns the timezone as a fixed time.Location, named as Python's
// tzname() names it ("UTC+01:00" when it has no name of its own).
func (z TimeZone) Location() *time.Location {
	return fixedZone(z.Offset, z.Name, timeZoneName(z.Offset, z.Name))
}

func fixedZone(offset int, name *string, unnamed string) *time.Location {
	switch {
	case name != nil:
		return time.FixedZone(*name, offset)
	case offset == 0:
		return time.UTC
	}
	return time.FixedZone(unnamed, offset)
}
