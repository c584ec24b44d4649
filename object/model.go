package object

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
)

// MaxDepth is the deepest level at which an item may sit inside a value (the
// top-level value is at level 0). See the package documentation.
const MaxDepth = 1000

// Value is a Python value. It is implemented only by the concrete types of
// this package; a nil Value is not a valid value (use [None]).
type Value interface {
	// Kind reports which concrete type the value is.
	Kind() Kind
	isValue()
}

// Pair is one key/value entry of a [Dict], or one attribute of an [Instance],
// [ClassType] or [Module] (whose keys are normally [Str]).
type Pair struct {
	Key   Value
	Value Value
}

// UUID identifies a class, an instance or a module within the interpreter.
type UUID [16]byte

// ParseUUID reads a UUID in the canonical 8-4-4-4-12 hexadecimal form
// String writes.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("object: %q is not a UUID in 8-4-4-4-12 form", s)
	}
	digits := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(u[:], []byte(digits)); err != nil {
		return UUID{}, fmt.Errorf("object: %q is not a UUID: %w", s, err)
	}
	return u, nil
}

// String formats the UUID in its canonical 8-4-4-4-12 hexadecimal form.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// None is Python's None.
type None struct{}

// Bool is a Python bool.
type Bool bool

// Int is a Python int that fits in 64 bits.
type Int int64

// BigInt is a Python int outside the int64 range. Decoders never produce a
// BigInt that fits an [Int]; encoders accept one and write it as an Int.
// Use [IntFromBig] to build the right one of the two.
type BigInt struct {
	Big *big.Int
}

// Float is a Python float. NaN payloads, infinities and the sign of zero
// survive the CBOR codec.
type Float float64

// Complex is a Python complex.
type Complex struct {
	Real, Imag float64
}

// Str is a Python str. It must hold valid UTF-8: decoders reject anything
// else and encoders refuse to send it.
type Str string

// Bytes is a Python bytes.
type Bytes []byte

// List is a Python list.
type List []Value

// Tuple is a Python tuple.
type Tuple []Value

// Dict is a Python dict: its entries in insertion order. Keys are hashable
// values, most often [Str].
type Dict []Pair

// Set is a Python set, in the interpreter's iteration order.
type Set []Value

// FrozenSet is a Python frozenset, in the interpreter's iteration order.
type FrozenSet []Value

// NamedTuple is an instance of a named tuple type (collections.namedtuple,
// typing.NamedTuple, or a struct sequence such as os.stat_result). Fields and
// Values have the same length.
type NamedTuple struct {
	TypeName string
	Fields   []string
	Values   []Value
}

// Field returns the value of the named field.
func (t NamedTuple) Field(name string) (Value, bool) {
	for i, f := range t.Fields {
		if f == name && i < len(t.Values) {
			return t.Values[i], true
		}
	}
	return nil, false
}

// ClassType is a class object defined in Python code or by the host.
type ClassType struct {
	Name string
	ID   UUID
	// HostDefined is true for classes the host declared.
	HostDefined bool
	// IsDataclass is true for classes decorated with @dataclass.
	IsDataclass bool
	// Attrs are the class attributes.
	Attrs []Pair
}

// Instance is an instance of a [ClassType]; a dataclass instance is one whose
// Class.IsDataclass is true, with its fields in Attrs in definition order.
type Instance struct {
	Class ClassType
	ID    UUID
	// Attrs are the instance attributes (its __dict__), keyed by [Str].
	Attrs []Pair
}

// Field returns the attribute with the given name, such as a dataclass field.
func (in Instance) Field(name string) (Value, bool) {
	for _, p := range in.Attrs {
		if k, ok := p.Key.(Str); ok && string(k) == name {
			return p.Value, true
		}
	}
	return nil, false
}

// Exception is an exception instance, such as ValueError('bad').
type Exception struct {
	// Type is the exception class name, such as "ValueError".
	Type string
	// Message is the exception's argument; HasMessage is false for an
	// exception raised without one.
	Message    string
	HasMessage bool
}

// Error formats the exception as Python's traceback does: "Type: message",
// or just "Type" without a message.
func (e Exception) Error() string {
	if !e.HasMessage {
		return e.Type
	}
	return e.Type + ": " + e.Message
}

// Path is a pathlib.Path (a POSIX path).
type Path string

// Date is a datetime.date.
type Date struct {
	Year, Month, Day int
}

// DateTime is a datetime.datetime. Offset (seconds east of UTC) is nil for a
// naive datetime; TZName is the name given to its timezone, if any.
type DateTime struct {
	Year, Month, Day                  int
	Hour, Minute, Second, Microsecond int
	Offset                            *int
	TZName                            *string
}

// Time is a datetime.time. Offset and TZName are as for [DateTime]; Fold is
// 0 or 1.
type Time struct {
	Hour, Minute, Second, Microsecond int
	Offset                            *int
	TZName                            *string
	Fold                              int
}

// TimeDelta is a datetime.timedelta, normalised as Python does:
// 0 <= Seconds < 86400 and 0 <= Microseconds < 1000000, with the sign in
// Days. Build one with [NewTimeDelta] or [TimeDeltaFromDuration].
type TimeDelta struct {
	Days, Seconds, Microseconds int
}

// TimeZone is a datetime.timezone: a fixed offset in seconds east of UTC and
// an optional name.
type TimeZone struct {
	Offset int
	Name   *string
}

// Function is a reference to a host function, as Python code sees it.
type Function struct {
	Name string
	// Doc is the function's docstring, if it has one.
	Doc *string
}

// Opaque is the repr() of a value that has no faithful form on the wire (a
// lambda, a generator, …). The interpreter produces it in outputs; it cannot
// be sent back as an input.
type Opaque string

// Cycle is the placeholder the interpreter puts where a container refers back
// to itself, such as "[...]" or "{...}". Output only, like [Opaque].
type Cycle string

// Ellipsis is Python's Ellipsis (...).
type Ellipsis struct{}

// NotImplemented is Python's NotImplemented.
type NotImplemented struct{}

// Decimal is a decimal.Decimal, as str() of it.
type Decimal string

// TypeObject is a builtin type object such as int or ValueError, by name.
type TypeObject string

// BuiltinFunction is a builtin function such as len, by name.
type BuiltinFunction string

// Module is a module provided by the host.
type Module struct {
	Name  string
	ID    UUID
	Attrs []Pair
}

// File is an open file object. Mode is an open() mode such as "r" or "wb+".
type File struct {
	Path     string
	Mode     string
	Position uint64
}

// IntFromBig returns n (which must not be nil) as an [Int] if it fits in 64
// bits, else as a [BigInt] holding a copy of n.
func IntFromBig(n *big.Int) Value {
	if n.IsInt64() {
		return Int(n.Int64())
	}
	return BigInt{Big: new(big.Int).Set(n)}
}

// IntFromUint64 returns u as an [Int], or as a [BigInt] above math.MaxInt64.
func IntFromUint64(u uint64) Value {
	if u <= math.MaxInt64 {
		return Int(u)
	}
	return BigInt{Big: new(big.Int).SetUint64(u)}
}

// Get returns the value stored under a key [Equal] to key.
func (d Dict) Get(key Value) (Value, bool) {
	for _, p := range d {
		if Equal(p.Key, key) {
			return p.Value, true
		}
	}
	return nil, false
}

func (None) isValue()            {}
func (Bool) isValue()            {}
func (Int) isValue()             {}
func (BigInt) isValue()          {}
func (Float) isValue()           {}
func (Complex) isValue()         {}
func (Str) isValue()             {}
func (Bytes) isValue()           {}
func (List) isValue()            {}
func (Tuple) isValue()           {}
func (Dict) isValue()            {}
func (Set) isValue()             {}
func (FrozenSet) isValue()       {}
func (NamedTuple) isValue()      {}
func (ClassType) isValue()       {}
func (Instance) isValue()        {}
func (Exception) isValue()       {}
func (Path) isValue()            {}
func (Date) isValue()            {}
func (DateTime) isValue()        {}
func (Time) isValue()            {}
func (TimeDelta) isValue()       {}
func (TimeZone) isValue()        {}
func (Function) isValue()        {}
func (Opaque) isValue()          {}
func (Cycle) isValue()           {}
func (Ellipsis) isValue()        {}
func (NotImplemented) isValue()  {}
func (Decimal) isValue()         {}
func (TypeObject) isValue()      {}
func (BuiltinFunction) isValue() {}
func (Module) isValue()          {}
func (File) isValue()            {}

// Kind returns KindNone.
func (None) Kind() Kind { return KindNone }

// Kind returns KindBool.
func (Bool) Kind() Kind { return KindBool }

// Kind returns KindInt.
func (Int) Kind() Kind { return KindInt }

// Kind returns KindBigInt.
func (BigInt) Kind() Kind { return KindBigInt }

// Kind returns KindFloat.
func (Float) Kind() Kind { return KindFloat }

// Kind returns KindComplex.
func (Complex) Kind() Kind { return KindComplex }

// Kind returns KindStr.
func (Str) Kind() Kind { return KindStr }

// Kind returns KindBytes.
func (Bytes) Kind() Kind { return KindBytes }

// Kind returns KindList.
func (List) Kind() Kind { return KindList }

// Kind returns KindTuple.
func (Tuple) Kind() Kind { return KindTuple }

// Kind returns KindDict.
func (Dict) Kind() Kind { return KindDict }

// Kind returns KindSet.
func (Set) Kind() Kind { return KindSet }

// Kind returns KindFrozenSet.
func (FrozenSet) Kind() Kind { return KindFrozenSet }

// Kind returns KindNamedTuple.
func (NamedTuple) Kind() Kind { return KindNamedTuple }

// Kind returns KindClassType.
func (ClassType) Kind() Kind { return KindClassType }

// Kind returns KindInstance.
func (Instance) Kind() Kind { return KindInstance }

// Kind returns KindException.
func (Exception) Kind() Kind { return KindException }

// Kind returns KindPath.
func (Path) Kind() Kind { return KindPath }

// Kind returns KindDate.
func (Date) Kind() Kind { return KindDate }

// Kind returns KindDateTime.
func (DateTime) Kind() Kind { return KindDateTime }

// Kind returns KindTime.
func (Time) Kind() Kind { return KindTime }

// Kind returns KindTimeDelta.
func (TimeDelta) Kind() Kind { return KindTimeDelta }

// Kind returns KindTimeZone.
func (TimeZone) Kind() Kind { return KindTimeZone }

// Kind returns KindFunction.
func (Function) Kind() Kind { return KindFunction }

// Kind returns KindOpaque.
func (Opaque) Kind() Kind { return KindOpaque }

// Kind returns KindCycle.
func (Cycle) Kind() Kind { return KindCycle }

// Kind returns KindEllipsis.
func (Ellipsis) Kind() Kind { return KindEllipsis }

// Kind returns KindNotImplemented.
func (NotImplemented) Kind() Kind { return KindNotImplemented }

// Kind returns KindDecimal.
func (Decimal) Kind() Kind { return KindDecimal }

// Kind returns KindTypeObject.
func (TypeObject) Kind() Kind { return KindTypeObject }

// Kind returns KindBuiltinFunction.
func (BuiltinFunction) Kind() Kind { return KindBuiltinFunction }

// Kind returns KindModule.
func (Module) Kind() Kind { return KindModule }

// Kind returns KindFile.
func (File) Kind() Kind { return KindFile }
