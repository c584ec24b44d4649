package object

import (
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

var (
	valueType    = reflect.TypeFor[Value]()
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	bigIntType   = reflect.TypeFor[big.Int]()
	numberType   = reflect.TypeFor[json.Number]()
	textMarshal  = reflect.TypeFor[encoding.TextMarshaler]()
)

// FromGo converts a Go value to a Python value:
//
//   - nil, and nil pointers and interfaces, become None; a Value is kept as
//     is; pointers and interfaces are followed;
//   - bool becomes Bool; every int and uint kind an Int (a uint64 above
//     math.MaxInt64 a BigInt); float32 and float64 a Float; complex64 and
//     complex128 a Complex; *big.Int and big.Int an Int or BigInt;
//     json.Number an Int, BigInt or Float;
//   - a string becomes a Str (it must be valid UTF-8); []byte and [N]byte
//     become Bytes (copied);
//   - time.Time becomes an aware DateTime ([DateTimeFromTime]) and
//     time.Duration a TimeDelta ([TimeDeltaFromDuration]);
//   - other slices and arrays become a List (a nil slice an empty List);
//   - maps become a Dict sorted by key, so the result does not depend on Go's
//     map order; keys may be strings, bools, numbers, types implementing
//     encoding.TextMarshaler (as Str) or interfaces holding those;
//   - structs become a Dict of Str keys in field order, following
//     encoding/json's field rules: json tag names, "-", omitempty, omitzero
//     and promoted fields of embedded structs.
//
// Channels, functions and unsafe pointers cannot be converted; the error is a
// *GoValueError naming the Go type and where it was.
func FromGo(x any) (Value, error) {
	return goConv{}.fromGo(x, 0)
}

// goConv is one way of converting Go values: FromGo's, or Dataclass's when
// dataclasses is set.
type goConv struct{ dataclasses bool }

func tooDeepGo(t string) error {
	return &GoValueError{GoType: t, Reason: "nested deeper than 1000 levels (does it contain itself?)"}
}

func (c goConv) fromGo(x any, depth int) (Value, error) {
	if depth > MaxDepth {
		return nil, tooDeepGo(fmt.Sprintf("%T", x))
	}
	switch v := x.(type) {
	case nil:
		return None{}, nil
	case Value:
		if reflect.TypeOf(v).Kind() != reflect.Pointer { // not a *Int or similar
			return v, nil
		}
	case bool:
		return Bool(v), nil
	case int:
		return Int(v), nil
	case int64:
		return Int(v), nil
	case float64:
		return Float(v), nil
	case string:
		return fromString(v, "string")
	case []byte:
		return Bytes(append([]byte{}, v...)), nil
	case time.Time:
		return DateTimeFromTime(v), nil
	case time.Duration:
		return TimeDeltaFromDuration(v), nil
	case *big.Int:
		if v == nil {
			return None{}, nil
		}
		return IntFromBig(v), nil
	case big.Int:
		return IntFromBig(&v), nil
	case json.Number:
		n, err := jsonNumber(string(v))
		if err != nil {
			return nil, &GoValueError{GoType: "json.Number", Reason: "not a number: " + string(v)}
		}
		return n, nil
	case []any:
		out := make(List, len(v))
		for i, e := range v {
			var err error
			if out[i], err = c.fromGo(e, depth+1); err != nil {
				return nil, prefixPath(err, indexSeg(i))
			}
		}
		return out, nil
	}
	return c.fromReflect(reflect.ValueOf(x), depth)
}

func fromString(s, goType string) (Value, error) {
	if !utf8.ValidString(s) {
		return nil, &GoValueError{GoType: goType, Reason: "string is not valid UTF-8"}
	}
	return Str(s), nil
}

func (c goConv) fromReflect(rv reflect.Value, depth int) (Value, error) {
	if depth > MaxDepth {
		return nil, tooDeepGo(rv.Type().String())
	}
	t := rv.Type()
	switch t {
	case timeType, durationType, bigIntType, numberType:
		return c.fromGo(rv.Interface(), depth)
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return None{}, nil
		}
		return c.fromReflect(rv.Elem(), depth+1)
	}
	if t.Implements(valueType) {
		return rv.Interface().(Value), nil
	}
	switch rv.Kind() {
	case reflect.Bool:
		return Bool(rv.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return IntFromUint64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return Float(rv.Float()), nil
	case reflect.Complex64, reflect.Complex128:
		c := rv.Complex()
		return Complex{Real: real(c), Imag: imag(c)}, nil
	case reflect.String:
		return fromString(rv.String(), t.String())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			b := make(Bytes, rv.Len())
			reflect.Copy(reflect.ValueOf([]byte(b)), rv)
			return b, nil
		}
		out := make(List, rv.Len())
		for i := range out {
			var err error
			if out[i], err = c.fromReflect(rv.Index(i), depth+1); err != nil {
				return nil, prefixPath(err, indexSeg(i))
			}
		}
		return out, nil
	case reflect.Map:
		return c.fromMap(rv, depth)
	case reflect.Struct:
		return c.fromStruct(rv, depth)
	}
	return nil, &GoValueError{GoType: t.String(), Reason: "unsupported type"}
}

func (c goConv) fromMap(rv reflect.Value, depth int) (Value, error) {
	out := make(Dict, 0, rv.Len())
	iter := rv.MapRange()
	for iter.Next() {
		k, err := mapKey(iter.Key())
		if err != nil {
			return nil, err
		}
		v, err := c.fromReflect(iter.Value(), depth+1)
		if err != nil {
			return nil, prefixPath(err, "["+fmt.Sprint(iter.Key().Interface())+"]")
		}
		out = append(out, Pair{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b Pair) int { return compareKeys(a.Key, b.Key) })
	return out, nil
}

// mapKey converts a Go map key to a hashable Python value.
func mapKey(k reflect.Value) (Value, error) {
	t := k.Type()
	if k.Kind() == reflect.Interface && !k.IsNil() {
		return mapKey(k.Elem())
	}
	if t.Implements(textMarshal) && (k.Kind() != reflect.Pointer || !k.IsNil()) {
		text, err := k.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return nil, &GoValueError{GoType: t.String(), Reason: "map key: " + err.Error()}
		}
		return fromString(string(text), t.String())
	}
	switch k.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return goConv{}.fromReflect(k, 0)
	}
	return nil, &GoValueError{GoType: t.String(), Reason: "unsupported map key type"}
}

// compareKeys orders map keys: by kind, then by value.
func compareKeys(a, b Value) int {
	if c := cmp.Compare(a.Kind(), b.Kind()); c != 0 {
		return c
	}
	switch x := a.(type) {
	case Str:
		return strings.Compare(string(x), string(b.(Str)))
	case Int:
		return cmp.Compare(x, b.(Int))
	case BigInt:
		return x.Big.Cmp(b.(BigInt).Big)
	case Float:
		return cmp.Compare(x, b.(Float))
	}
	// The only other kind mapKey produces.
	return cmp.Compare(boolInt(bool(a.(Bool))), boolInt(bool(b.(Bool))))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c goConv) fromStruct(rv reflect.Value, depth int) (Value, error) {
	if c.dataclasses {
		return c.dataclass(rv, depth)
	}
	info := fieldsOf(rv.Type())
	out := make(Dict, 0, len(info.fields))
	for _, f := range info.fields {
		fv, err := rv.FieldByIndexErr(f.index)
		if err != nil {
			continue // behind a nil embedded pointer
		}
		if f.omitEmpty && isEmpty(fv) || f.omitZero && fv.IsZero() {
			continue
		}
		v, err := c.fromReflect(fv, depth+1)
		if err != nil {
			return nil, prefixPath(err, "."+rv.Type().FieldByIndex(f.index).Name)
		}
		out = append(out, Pair{Key: Str(f.name), Value: v})
	}
	return out, nil
}

// isEmpty is encoding/json's test for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
