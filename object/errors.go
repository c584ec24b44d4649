package object

import (
	"errors"
	"strconv"
)

// Sentinel errors, for use with errors.Is.
var (
	// ErrMalformed matches every *DecodeError: the input is not a valid CBOR
	// encoding of a Python value.
	ErrMalformed = errors.New("object: malformed CBOR value")
	// ErrInvalidValue matches every *EncodeError: the value cannot be put on
	// the wire.
	ErrInvalidValue = errors.New("object: invalid value")
	// ErrNotJSON matches every *JSONError: the value has no JSON form.
	ErrNotJSON = errors.New("object: value is not JSON-compatible")
)

// DecodeError reports input that [Decode] or [DecodePrefix] cannot read.
type DecodeError struct {
	// Offset is the byte offset in the input where the problem was found.
	Offset int
	// Reason says what is wrong, such as "unexpected end of input".
	Reason string
}

// Error formats the error as "object: malformed CBOR at byte N: reason".
func (e *DecodeError) Error() string {
	return "object: malformed CBOR at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Unwrap returns ErrMalformed.
func (e *DecodeError) Unwrap() error { return ErrMalformed }

// EncodeError reports a value that [Encode] cannot write: a nil Value or
// *big.Int, a string that is not UTF-8, a NamedTuple whose field and value
// counts differ, or nesting deeper than [MaxDepth].
type EncodeError struct {
	// Path locates the bad item inside the value, such as "[2]['name']";
	// empty for the value itself.
	Path string
	// Reason says what is wrong.
	Reason string
}

// Error formats the error as "object: cannot encode value at PATH: reason".
func (e *EncodeError) Error() string {
	return "object: cannot encode value" + at(e.Path) + ": " + e.Reason
}

// Unwrap returns ErrInvalidValue.
func (e *EncodeError) Unwrap() error { return ErrInvalidValue }

// JSONError reports a value that [ToJSON] cannot represent.
type JSONError struct {
	// Path locates the item inside the value, such as "['when']"; empty for
	// the value itself.
	Path string
	// Kind is the kind of the item that has no JSON form (KindInvalid for a
	// nil Value).
	Kind Kind
	// Reason says what is wrong.
	Reason string
}

// Error formats the error as "object: no JSON form at PATH: reason".
func (e *JSONError) Error() string {
	return "object: no JSON form" + at(e.Path) + ": " + e.Reason
}

// Unwrap returns ErrNotJSON.
func (e *JSONError) Unwrap() error { return ErrNotJSON }

// ConversionError reports a value that [Into] or [ToGo] cannot convert to the
// Go type wanted. Its message reads like a Python TypeError:
// "cannot convert str to int at [0]".
type ConversionError struct {
	// Path locates the item inside the converted value, in Python syntax:
	// "[0]" for a sequence item, "['key']" for a dict entry, ".name" for an
	// attribute or field; empty for the value itself. Callers that know
	// where the value came from may prefix it, e.g. "args[0]" + Path.
	Path string
	// Want is the Go type wanted, such as "int" or "map[string]any".
	Want string
	// Got is the kind of the value found.
	Got Kind
	// Detail, when set, says why a value of the right kind did not fit,
	// such as "300 overflows int8".
	Detail string
}

// Error formats the error as "cannot convert KIND to WANT at PATH: detail".
func (e *ConversionError) Error() string {
	msg := "cannot convert " + e.Got.String() + " to " + e.Want + at(e.Path)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// GoValueError reports a Go value that [FromGo] cannot convert to a Python
// value.
type GoValueError struct {
	// Path locates the item inside the Go value: ".Field", "[3]" or
	// "[key]"; empty for the value itself.
	Path string
	// GoType is the Go type of the item, such as "chan int".
	GoType string
	// Reason says what is wrong.
	Reason string
}

// Error formats the error as "object: cannot convert Go TYPE at PATH to a Python value: reason".
func (e *GoValueError) Error() string {
	return "object: cannot convert Go " + e.GoType + at(e.Path) + " to a Python value: " + e.Reason
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return " at " + path
}

// prefixPath prepends seg to the Path of the typed errors of this package
// and returns err.
func prefixPath(err error, seg string) error {
	switch e := err.(type) {
	case *EncodeError:
		e.Path = seg + e.Path
	case *JSONError:
		e.Path = seg + e.Path
	case *ConversionError:
		e.Path = seg + e.Path
	case *GoValueError:
		e.Path = seg + e.Path
	}
	return err
}

func indexSeg(i int) string { return "[" + strconv.Itoa(i) + "]" }
