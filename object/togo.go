package object

import (
	"math/big"
	"time"
)

// ToGo converts a Python value to its natural Go form:
//
//	None                      nil
//	bool                      bool
//	int                       int64, or *big.Int outside the int64 range
//	float                     float64
//	complex                   complex128
//	str, Path, Decimal        string
//	bytes                     []byte (a copy)
//	list, tuple, set,
//	frozenset, named tuple    []any
//	dict, instance            map[string]any when every key is a str, else
//	                          map[any]any when every key converts to a
//	                          comparable Go value (nil, bool, int64,
//	                          *big.Int, float64, complex128, string,
//	                          time.Time, time.Duration)
//	date, datetime            time.Time ([Date.GoTime], [DateTime.GoTime])
//	timedelta                 time.Duration
//	timezone                  *time.Location
//	exception                 the Exception itself (an error)
//
// Any other kind (time, class, function, module, file, Ellipsis, …) is
// returned as the Value itself. Errors are *ConversionError: a dict key with
// no comparable Go form, or a timedelta beyond time.Duration's range.
func ToGo(v Value) (any, error) {
	return toGo(v, 0)
}

func toGo(v Value, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, &ConversionError{Want: "Go value", Got: kindOf(v), Detail: "nested deeper than 1000 levels"}
	}
	switch x := v.(type) {
	case None:
		return nil, nil
	case Bool:
		return bool(x), nil
	case Int:
		return int64(x), nil
	case BigInt:
		if x.Big == nil {
			return nil, &ConversionError{Want: "*big.Int", Got: KindBigInt, Detail: "nil *big.Int"}
		}
		return new(big.Int).Set(x.Big), nil
	case Float:
		return float64(x), nil
	case Complex:
		return complex(x.Real, x.Imag), nil
	case Str:
		return string(x), nil
	case Path:
		return string(x), nil
	case Decimal:
		return string(x), nil
	case Bytes:
		return append([]byte{}, x...), nil
	case List:
		return toGoItems(x, depth)
	case Tuple:
		return toGoItems(x, depth)
	case Set:
		return toGoItems(x, depth)
	case FrozenSet:
		return toGoItems(x, depth)
	case NamedTuple:
		return toGoItems(x.Values, depth)
	case Dict:
		return toGoMap(x, depth)
	case Instance:
		return toGoMap(x.Attrs, depth)
	case Date:
		return x.GoTime(), nil
	case DateTime:
		return x.GoTime(), nil
	case TimeDelta:
		d, ok := x.GoDuration()
		if !ok {
			return nil, &ConversionError{Want: "time.Duration", Got: KindTimeDelta, Detail: "out of range"}
		}
		return d, nil
	case TimeZone:
		return x.Location(), nil
	}
	return v, nil
}

func kindOf(v Value) Kind {
	if v == nil {
		return KindInvalid
	}
	return v.Kind()
}

func toGoItems(xs []Value, depth int) (any, error) {
	out := make([]any, len(xs))
	for i, x := range xs {
		var err error
		if out[i], err = toGo(x, depth+1); err != nil {
			return nil, prefixPath(err, indexSeg(i))
		}
	}
	return out, nil
}

func toGoMap(ps []Pair, depth int) (any, error) {
	strKeys := true
	for _, p := range ps {
		if _, ok := p.Key.(Str); !ok {
			strKeys = false
			break
		}
	}
	if strKeys {
		out := make(map[string]any, len(ps))
		for _, p := range ps {
			v, err := toGo(p.Value, depth+1)
			if err != nil {
				return nil, prefixPath(err, entrySeg(p.Key, false))
			}
			out[string(p.Key.(Str))] = v
		}
		return out, nil
	}
	out := make(map[any]any, len(ps))
	for i, p := range ps {
		k, err := toGo(p.Key, depth+1)
		if err != nil {
			return nil, prefixPath(err, ".keys()"+indexSeg(i))
		}
		switch k.(type) {
		case nil, bool, int64, *big.Int, float64, complex128, string, time.Time, time.Duration:
		default:
			return nil, &ConversionError{Path: ".keys()" + indexSeg(i), Want: "comparable map key", Got: p.Key.Kind()}
		}
		v, err := toGo(p.Value, depth+1)
		if err != nil {
			return nil, prefixPath(err, entrySeg(p.Key, false))
		}
		out[k] = v
	}
	return out, nil
}
