package object

import (
	"math"
	"slices"
)

// Equal reports whether a and b are the same value structurally: the same
// kind (an Int and a BigInt holding the same number count as the same) with
// equal contents, compared in order. This is identity of the wire form, not
// Python's ==: floats compare by their bits (so a NaN equals itself but 0.0
// and -0.0 differ), 1 and 1.0 differ, and dicts and sets must list their
// entries in the same order. Values nested deeper than [MaxDepth] compare
// unequal, and a nil Value equals only nil.
func Equal(a, b Value) bool {
	return equal(a, b, 0)
}

func equal(a, b Value, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case Int, BigInt:
		return equalInt(a, b)
	case Float:
		y, ok := b.(Float)
		return ok && math.Float64bits(float64(x)) == math.Float64bits(float64(y))
	case Complex:
		y, ok := b.(Complex)
		return ok && math.Float64bits(x.Real) == math.Float64bits(y.Real) &&
			math.Float64bits(x.Imag) == math.Float64bits(y.Imag)
	case Bytes:
		y, ok := b.(Bytes)
		return ok && string(x) == string(y)
	case List:
		y, ok := b.(List)
		return ok && equalItems(x, y, depth)
	case Tuple:
		y, ok := b.(Tuple)
		return ok && equalItems(x, y, depth)
	case Set:
		y, ok := b.(Set)
		return ok && equalItems(x, y, depth)
	case FrozenSet:
		y, ok := b.(FrozenSet)
		return ok && equalItems(x, y, depth)
	case Dict:
		y, ok := b.(Dict)
		return ok && equalPairs(x, y, depth)
	case NamedTuple:
		y, ok := b.(NamedTuple)
		return ok && x.TypeName == y.TypeName && slices.Equal(x.Fields, y.Fields) &&
			equalItems(x.Values, y.Values, depth)
	case ClassType:
		y, ok := b.(ClassType)
		return ok && equalClass(x, y, depth)
	case Instance:
		y, ok := b.(Instance)
		return ok && x.ID == y.ID && equalClass(x.Class, y.Class, depth+1) && equalPairs(x.Attrs, y.Attrs, depth)
	case Module:
		y, ok := b.(Module)
		return ok && x.Name == y.Name && x.ID == y.ID && equalPairs(x.Attrs, y.Attrs, depth)
	case DateTime:
		y, ok := b.(DateTime)
		return ok && x.Year == y.Year && x.Month == y.Month && x.Day == y.Day &&
			x.Hour == y.Hour && x.Minute == y.Minute && x.Second == y.Second &&
			x.Microsecond == y.Microsecond && equalPtr(x.Offset, y.Offset) && equalPtr(x.TZName, y.TZName)
	case Time:
		y, ok := b.(Time)
		return ok && x.Hour == y.Hour && x.Minute == y.Minute && x.Second == y.Second &&
			x.Microsecond == y.Microsecond && x.Fold == y.Fold &&
			equalPtr(x.Offset, y.Offset) && equalPtr(x.TZName, y.TZName)
	case TimeZone:
		y, ok := b.(TimeZone)
		return ok && x.Offset == y.Offset && equalPtr(x.Name, y.Name)
	case Function:
		y, ok := b.(Function)
		return ok && x.Name == y.Name && equalPtr(x.Doc, y.Doc)
	}
	// The remaining kinds are comparable Go values.
	return a == b
}

func equalInt(a, b Value) bool {
	switch x := a.(type) {
	case Int:
		switch y := b.(type) {
		case Int:
			return x == y
		case BigInt:
			return y.Big != nil && y.Big.IsInt64() && y.Big.Int64() == int64(x)
		}
	case BigInt:
		switch y := b.(type) {
		case Int:
			return equalInt(y, x)
		case BigInt:
			return x.Big != nil && y.Big != nil && x.Big.Cmp(y.Big) == 0
		}
	}
	return false
}

func equalItems(x, y []Value, depth int) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !equal(x[i], y[i], depth+1) {
			return false
		}
	}
	return true
}

func equalPairs(x, y []Pair, depth int) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !equal(x[i].Key, y[i].Key, depth+1) || !equal(x[i].Value, y[i].Value, depth+1) {
			return false
		}
	}
	return true
}

func equalClass(x, y ClassType, depth int) bool {
	return depth <= MaxDepth && x.Name == y.Name && x.ID == y.ID && x.HostDefined == y.HostDefined &&
		x.IsDataclass == y.IsDataclass && equalPairs(x.Attrs, y.Attrs, depth)
}

func equalPtr[T comparable](x, y *T) bool {
	if x == nil || y == nil {
		return x == y
	}
	return *x == *y
}
