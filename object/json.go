package object

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ToJSON returns the JSON form of v, as Python's json.dumps would write it
// but without losing anything: None is null, bools and ints (of any size) are
// JSON literals and numbers, a finite float keeps its repr (1.0, 1e+16), a str
// is a string, a list, tuple or named tuple is an array, and a dict whose
// keys are all str is an object in insertion order. Anything else (NaN or
// infinities, bytes, sets, dicts with other keys, datetimes, instances, …)
// is a *JSONError (matching ErrNotJSON) naming where and what it is.
func ToJSON(v Value) ([]byte, error) {
	return appendJSON(make([]byte, 0, 64), v, 0)
}

// JSONCompatible reports whether [ToJSON] can represent v.
func JSONCompatible(v Value) bool {
	return jsonCompatible(v, 0)
}

func jsonCompatible(v Value, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	switch x := v.(type) {
	case None, Bool, Int:
		return true
	case BigInt:
		return x.Big != nil
	case Float:
		return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
	case Str:
		return utf8.ValidString(string(x))
	case List:
		return jsonCompatibleItems(x, depth)
	case Tuple:
		return jsonCompatibleItems(x, depth)
	case NamedTuple:
		return jsonCompatibleItems(x.Values, depth)
	case Dict:
		for _, p := range x {
			if k, ok := p.Key.(Str); !ok || !utf8.ValidString(string(k)) || !jsonCompatible(p.Value, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

func jsonCompatibleItems(xs []Value, depth int) bool {
	for _, x := range xs {
		if !jsonCompatible(x, depth+1) {
			return false
		}
	}
	return true
}

func notJSON(v Value, reason string) error {
	k := KindInvalid
	if v != nil {
		k = v.Kind()
	}
	return &JSONError{Kind: k, Reason: reason}
}

func appendJSON(b []byte, v Value, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return nil, notJSON(v, "nested deeper than 1000 levels")
	}
	switch x := v.(type) {
	case None:
		return append(b, "null"...), nil
	case Bool:
		return strconv.AppendBool(b, bool(x)), nil
	case Int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case BigInt:
		if x.Big == nil {
			return nil, notJSON(v, "BigInt holds a nil *big.Int")
		}
		return x.Big.Append(b, 10), nil
	case Float:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, notJSON(v, "float "+Repr(x)+" has no JSON form")
		}
		return appendFloatRepr(b, float64(x)), nil
	case Str:
		return appendJSONString(b, x)
	case List:
		return appendJSONItems(b, x, depth)
	case Tuple:
		return appendJSONItems(b, x, depth)
	case NamedTuple:
		return appendJSONItems(b, x.Values, depth)
	case Dict:
		b = append(b, '{')
		var err error
		for i, p := range x {
			if i > 0 {
				b = append(b, ',')
			}
			k, ok := p.Key.(Str)
			if !ok {
				return nil, prefixPath(notJSON(p.Key, "dict key is not a str"), ".keys()"+indexSeg(i))
			}
			if b, err = appendJSONString(b, k); err != nil {
				return nil, prefixPath(err, ".keys()"+indexSeg(i))
			}
			if b, err = appendJSON(append(b, ':'), p.Value, depth+1); err != nil {
				return nil, prefixPath(err, "["+Repr(k)+"]")
			}
		}
		return append(b, '}'), nil
	case nil:
		return nil, notJSON(v, "nil Value")
	}
	return nil, notJSON(v, v.Kind().String()+" has no JSON form")
}

func appendJSONItems(b []byte, xs []Value, depth int) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSON(b, x, depth+1); err != nil {
			return nil, prefixPath(err, indexSeg(i))
		}
	}
	return append(b, ']'), nil
}

func appendJSONString(b []byte, s Str) ([]byte, error) {
	if !utf8.ValidString(string(s)) {
		return nil, notJSON(s, "str is not valid UTF-8")
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = appendHexEscape(b, 'u', uint32(c), 4)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"'), nil
}

// FromJSON parses one JSON document: objects become a [Dict] in document
// order (a repeated key keeps its first position and its last value, as in
// Python), integers an [Int] or [BigInt] exactly, other numbers a [Float],
// strings a [Str], arrays a [List], and null, true and false [None] and
// [Bool]. Invalid JSON, trailing data and nesting deeper than [MaxDepth]
// are errors.
func FromJSON(data []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonSyntax(err)
	}
	v, err := jsonValue(dec, tok, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("object: invalid JSON: data after the top-level value")
	}
	return v, nil
}

func jsonSyntax(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("object: invalid JSON: %w", err)
}

func jsonValue(dec *json.Decoder, tok json.Token, depth int) (Value, error) {
	if depth > MaxDepth {
		return nil, errors.New("object: invalid JSON: nested deeper than 1000 levels")
	}
	switch x := tok.(type) {
	case nil:
		return None{}, nil
	case bool:
		return Bool(x), nil
	case string:
		return Str(x), nil
	case json.Number:
		return jsonNumber(string(x))
	}
	// The decoder yields only an opening delimiter where a value starts.
	if tok == json.Delim('[') {
		return jsonArray(dec, depth)
	}
	return jsonObject(dec, depth)
}

func jsonNumber(s string) (Value, error) {
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, jsonSyntax(err)
		}
		return Float(f), nil // out of range: ±inf or 0, as Python's json.loads
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Int(n), nil
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("object: invalid JSON: bad number %q", s)
	}
	return IntFromBig(n), nil
}

func jsonArray(dec *json.Decoder, depth int) (Value, error) {
	out := List{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonSyntax(err)
		}
		if tok == json.Delim(']') {
			return out, nil
		}
		v, err := jsonValue(dec, tok, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// dictIndexMin is the size from which a JSON object's keys are indexed in a
// map to find repeated ones; smaller objects are searched linearly.
const dictIndexMin = 16

func jsonObject(dec *json.Decoder, depth int) (Value, error) {
	out := Dict{}
	var index map[string]int
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonSyntax(err)
		}
		if tok == json.Delim('}') {
			return out, nil
		}
		key, _ := tok.(string) // the decoder only yields string keys here
		if tok, err = dec.Token(); err != nil {
			return nil, jsonSyntax(err)
		}
		v, err := jsonValue(dec, tok, depth+1)
		if err != nil {
			return nil, err
		}
		if i, ok := findKey(out, index, key); ok {
			out[i].Value = v
			continue
		}
		if index == nil && len(out) == dictIndexMin {
			index = make(map[string]int, 2*dictIndexMin)
			for i, p := range out {
				index[string(p.Key.(Str))] = i
			}
		}
		if index != nil {
			index[key] = len(out)
		}
		out = append(out, Pair{Key: Str(key), Value: v})
	}
}

func findKey(d Dict, index map[string]int, key string) (int, bool) {
	if index != nil {
		i, ok := index[key]
		return i, ok
	}
	for i, p := range d {
		if string(p.Key.(Str)) == key {
			return i, true
		}
	}
	return 0, false
}
