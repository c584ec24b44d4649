package object

import "strconv"

// ToStr returns Python's str() of v: the text of a [Str], [Path], [Decimal],
// [Opaque] or [Cycle], the message of an [Exception], the ISO forms Python
// prints for dates, times, timedeltas and timezones, and [Repr] otherwise.
func ToStr(v Value) string {
	switch x := v.(type) {
	case Str:
		return string(x)
	case Path:
		return string(x)
	case Decimal:
		return string(x)
	case Opaque:
		return string(x)
	case Cycle:
		return string(x)
	case Exception:
		return x.Message
	case Date:
		return string(appendDate(nil, x.Year, x.Month, x.Day))
	case DateTime:
		b := appendDate(nil, x.Year, x.Month, x.Day)
		b = appendClock(append(b, ' '), x.Hour, x.Minute, x.Second, x.Microsecond)
		return string(appendUTCOffset(b, x.Offset))
	case Time:
		b := appendClock(nil, x.Hour, x.Minute, x.Second, x.Microsecond)
		return string(appendUTCOffset(b, x.Offset))
	case TimeDelta:
		return timeDeltaStr(x)
	case TimeZone:
		return timeZoneName(x.Offset, x.Name)
	}
	return Repr(v)
}

// appendDate formats a date as isoformat() does: 2024-01-02.
func appendDate(b []byte, year, month, day int) []byte {
	b = appendPadded(b, year, 4)
	b = appendPadded(append(b, '-'), month, 2)
	return appendPadded(append(b, '-'), day, 2)
}

// appendClock formats a time of day as isoformat() does: 03:04:05, with
// .000006 when there are microseconds.
func appendClock(b []byte, hour, minute, second, micro int) []byte {
	b = appendPadded(b, hour, 2)
	b = appendPadded(append(b, ':'), minute, 2)
	b = appendPadded(append(b, ':'), second, 2)
	if micro != 0 {
		b = appendPadded(append(b, '.'), micro, 6)
	}
	return b
}

// appendUTCOffset adds a UTC offset as isoformat() does: +01:00, -05:30,
// +00:00:30; nothing for a naive value.
func appendUTCOffset(b []byte, offset *int) []byte {
	if offset == nil {
		return b
	}
	return appendOffset(b, *offset)
}

func appendOffset(b []byte, offset int) []byte {
	sign := byte('+')
	if offset < 0 {
		sign, offset = '-', -offset
	}
	b = appendPadded(append(b, sign), offset/3600, 2)
	b = appendPadded(append(b, ':'), offset/60%60, 2)
	if offset%60 != 0 {
		b = appendPadded(append(b, ':'), offset%60, 2)
	}
	return b
}

// timeDeltaStr formats a timedelta as str() does: "1 day, 2:03:04.000005".
func timeDeltaStr(d TimeDelta) string {
	var b []byte
	if d.Days != 0 {
		b = strconv.AppendInt(b, int64(d.Days), 10)
		if d.Days == 1 || d.Days == -1 {
			b = append(b, " day, "...)
		} else {
			b = append(b, " days, "...)
		}
	}
	b = strconv.AppendInt(b, int64(d.Seconds/3600), 10)
	b = appendPadded(append(b, ':'), d.Seconds/60%60, 2)
	b = appendPadded(append(b, ':'), d.Seconds%60, 2)
	if d.Microseconds != 0 {
		b = appendPadded(append(b, '.'), d.Microseconds, 6)
	}
	return string(b)
}

// timeZoneName is Python's tzname() of a fixed-offset timezone: its name, or
// "UTC" for offset 0, or "UTC+01:00".
func timeZoneName(offset int, name *string) string {
	switch {
	case name != nil:
		return *name
	case offset == 0:
		return "UTC"
	}
	return string(appendOffset([]byte("UTC"), offset))
}

// appendPadded formats n with at least width digits, zero-padded.
func appendPadded(b []byte, n, width int) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	var tmp [20]byte
	digits := strconv.AppendInt(tmp[:0], int64(n), 10)
	for i := len(digits); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, digits...)
}
