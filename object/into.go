package object

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
)

// Into stores v in the Go value dst points to, converting as
// encoding/json.Unmarshal does for JSON:
//
//   - bool from Bool; int and uint kinds from Int or BigInt, checking range;
//     float kinds from Float, Int or BigInt; complex kinds from Complex, Float
//     or Int; string kinds from Str;
//   - []byte and [N]byte from Bytes (copied; an array's length must match);
//     other slices and arrays from a list, tuple, set, frozenset or named
//     tuple, item by item;
//   - maps from a dict or an instance's attributes, converting keys and
//     values; structs from a dict with str keys, an instance's attributes or
//     a named tuple's fields, matched to fields by json tag or name (exactly,
//     else ignoring case); unmatched keys are ignored and unmatched fields
//     keep their value;
//   - time.Time from DateTime or Date, time.Duration from TimeDelta, big.Int
//     from Int or BigInt;
//   - pointers: None sets nil, anything else is stored in the pointee,
//     allocating it when nil;
//   - any (an empty interface) receives [ToGo] of v; another interface type
//     receives v itself if v implements it (a Value, or error for an
//     Exception); a concrete Value type receives v if v has that type.
//
// dst must be a non-nil pointer. Conversion failures are *ConversionError,
// whose Path locates the item within v. On error dst may be partly filled.
func Into(v Value, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("object: Into needs a non-nil pointer, got %T", dst)
	}
	return into(v, rv.Elem(), 0)
}

func mismatch(v Value, t reflect.Type) error {
	return &ConversionError{Want: t.String(), Got: kindOf(v)}
}

func outOfRange(v Value, t reflect.Type) error {
	return &ConversionError{Want: t.String(), Got: kindOf(v), Detail: Repr(v) + " is out of range"}
}

func into(v Value, rv reflect.Value, depth int) error {
	t := rv.Type()
	if depth > MaxDepth {
		return &ConversionError{Want: t.String(), Got: kindOf(v), Detail: "nested deeper than 1000 levels"}
	}
	if v != nil && reflect.TypeOf(v) == t {
		rv.Set(reflect.ValueOf(v))
		return nil
	}
	switch t {
	case timeType:
		return intoTime(v, rv)
	case durationType:
		td, ok := v.(TimeDelta)
		if !ok {
			return mismatch(v, t)
		}
		d, ok := td.GoDuration()
		if !ok {
			return outOfRange(v, t)
		}
		rv.SetInt(int64(d))
		return nil
	case bigIntType:
		n, ok := bigOf(v)
		if !ok {
			return mismatch(v, t)
		}
		rv.Set(reflect.ValueOf(n).Elem())
		return nil
	}
	switch rv.Kind() {
	case reflect.Interface:
		return intoInterface(v, rv)
	case reflect.Pointer:
		if _, ok := v.(None); ok {
			rv.SetZero()
			return nil
		}
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		return into(v, rv.Elem(), depth)
	case reflect.Bool:
		b, ok := v.(Bool)
		if !ok {
			return mismatch(v, t)
		}
		rv.SetBool(bool(b))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intoInt(v, rv)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return intoUint(v, rv)
	case reflect.Float32, reflect.Float64:
		f, ok := floatOf(v)
		if !ok {
			return mismatch(v, t)
		}
		if !math.IsInf(f, 0) && rv.OverflowFloat(f) {
			return outOfRange(v, t)
		}
		rv.SetFloat(f)
	case reflect.Complex64, reflect.Complex128:
		return intoComplex(v, rv)
	case reflect.String:
		s, ok := v.(Str)
		if !ok {
			return mismatch(v, t)
		}
		rv.SetString(string(s))
	case reflect.Slice, reflect.Array:
		return intoSequence(v, rv, depth)
	case reflect.Map:
		return intoMap(v, rv, depth)
	case reflect.Struct:
		return intoStruct(v, rv, depth)
	default:
		return &ConversionError{Want: t.String(), Got: kindOf(v), Detail: "unsupported Go type"}
	}
	return nil
}

func intoInterface(v Value, rv reflect.Value) error {
	t := rv.Type()
	if t.NumMethod() == 0 {
		g, err := ToGo(v)
		if err != nil {
			return err
		}
		if g == nil {
			rv.SetZero()
		} else {
			rv.Set(reflect.ValueOf(g))
		}
		return nil
	}
	if v == nil || !reflect.TypeOf(v).Implements(t) {
		return mismatch(v, t)
	}
	rv.Set(reflect.ValueOf(v))
	return nil
}

func intoTime(v Value, rv reflect.Value) error {
	switch x := v.(type) {
	case DateTime:
		rv.Set(reflect.ValueOf(x.GoTime()))
	case Date:
		rv.Set(reflect.ValueOf(x.GoTime()))
	default:
		return mismatch(v, rv.Type())
	}
	return nil
}

func bigOf(v Value) (*big.Int, bool) {
	switch x := v.(type) {
	case Int:
		return big.NewInt(int64(x)), true
	case BigInt:
		if x.Big != nil {
			return new(big.Int).Set(x.Big), true
		}
	}
	return nil, false
}

func intoInt(v Value, rv reflect.Value) error {
	switch x := v.(type) {
	case Int:
		if rv.OverflowInt(int64(x)) {
			return outOfRange(v, rv.Type())
		}
		rv.SetInt(int64(x))
		return nil
	case BigInt:
		return outOfRange(v, rv.Type())
	}
	return mismatch(v, rv.Type())
}

func intoUint(v Value, rv reflect.Value) error {
	switch x := v.(type) {
	case Int:
		if x < 0 || rv.OverflowUint(uint64(x)) {
			return outOfRange(v, rv.Type())
		}
		rv.SetUint(uint64(x))
		return nil
	case BigInt:
		if x.Big == nil || !x.Big.IsUint64() || rv.OverflowUint(x.Big.Uint64()) {
			return outOfRange(v, rv.Type())
		}
		rv.SetUint(x.Big.Uint64())
		return nil
	}
	return mismatch(v, rv.Type())
}

// floatOf converts a float or int as Python's float() does; an int too large
// for a float64 does not convert.
func floatOf(v Value) (float64, bool) {
	switch x := v.(type) {
	case Float:
		return float64(x), true
	case Int:
		return float64(x), true
	case BigInt:
		if x.Big == nil {
			return 0, false
		}
		f, _ := new(big.Float).SetInt(x.Big).Float64()
		return f, !math.IsInf(f, 0)
	}
	return 0, false
}

func intoComplex(v Value, rv reflect.Value) error {
	var c complex128
	if x, ok := v.(Complex); ok {
		c = complex(x.Real, x.Imag)
	} else if f, ok := floatOf(v); ok {
		c = complex(f, 0)
	} else {
		return mismatch(v, rv.Type())
	}
	if rv.OverflowComplex(c) {
		return outOfRange(v, rv.Type())
	}
	rv.SetComplex(c)
	return nil
}

func itemsOf(v Value) ([]Value, bool) {
	switch x := v.(type) {
	case List:
		return x, true
	case Tuple:
		return x, true
	case Set:
		return x, true
	case FrozenSet:
		return x, true
	case NamedTuple:
		return x.Values, true
	}
	return nil, false
}

func intoSequence(v Value, rv reflect.Value, depth int) error {
	t := rv.Type()
	if b, ok := v.(Bytes); ok && t.Elem().Kind() == reflect.Uint8 {
		if t.Kind() == reflect.Array {
			if len(b) != t.Len() {
				return &ConversionError{Want: t.String(), Got: KindBytes, Detail: "length " + strconv.Itoa(len(b))}
			}
		} else {
			rv.Set(reflect.MakeSlice(t, len(b), len(b)))
		}
		reflect.Copy(rv, reflect.ValueOf([]byte(b)))
		return nil
	}
	items, ok := itemsOf(v)
	if !ok {
		return mismatch(v, t)
	}
	if t.Kind() == reflect.Array {
		if len(items) != t.Len() {
			return &ConversionError{Want: t.String(), Got: v.Kind(), Detail: "length " + strconv.Itoa(len(items))}
		}
	} else {
		rv.Set(reflect.MakeSlice(t, len(items), len(items)))
	}
	for i, x := range items {
		if err := into(x, rv.Index(i), depth+1); err != nil {
			return prefixPath(err, indexSeg(i))
		}
	}
	return nil
}

// entries returns the key/value entries of a dict or an instance's attributes;
// attrs is true for the latter.
func entries(v Value) (ps []Pair, attrs, ok bool) {
	switch x := v.(type) {
	case Dict:
		return x, false, true
	case Instance:
		return x.Attrs, true, true
	}
	return nil, false, false
}

func intoMap(v Value, rv reflect.Value, depth int) error {
	t := rv.Type()
	ps, attrs, ok := entries(v)
	if !ok {
		return mismatch(v, t)
	}
	m := reflect.MakeMapWithSize(t, len(ps))
	for i, p := range ps {
		k := reflect.New(t.Key()).Elem()
		if err := into(p.Key, k, depth+1); err != nil {
			return prefixPath(err, ".keys()"+indexSeg(i))
		}
		e := reflect.New(t.Elem()).Elem()
		if err := into(p.Value, e, depth+1); err != nil {
			return prefixPath(err, entrySeg(p.Key, attrs))
		}
		m.SetMapIndex(k, e)
	}
	rv.Set(m)
	return nil
}

func intoStruct(v Value, rv reflect.Value, depth int) error {
	info := fieldsOf(rv.Type())
	set := func(name string, x Value, seg string) error {
		f, ok := info.lookup(name)
		if !ok {
			return nil
		}
		if err := into(x, fieldAlloc(rv, f.index), depth+1); err != nil {
			return prefixPath(err, seg)
		}
		return nil
	}
	if t, ok := v.(NamedTuple); ok {
		for i, name := range t.Fields {
			if i < len(t.Values) {
				if err := set(name, t.Values[i], "."+name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	ps, attrs, ok := entries(v)
	if !ok {
		return mismatch(v, rv.Type())
	}
	for _, p := range ps {
		if k, ok := p.Key.(Str); ok {
			if err := set(string(k), p.Value, entrySeg(k, attrs)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldAlloc returns the field at index, allocating nil embedded pointers on
// the way.
func fieldAlloc(rv reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				rv.Set(reflect.New(rv.Type().Elem()))
			}
			rv = rv.Elem()
		}
		rv = rv.Field(x)
	}
	return rv
}
