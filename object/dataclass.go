package object

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
)

// Dataclass converts a Go value to a Python value as FromGo does, except
// that every struct (at any depth: fields, slice items, map values) becomes
// a dataclass instance rather than a dict. Python sees an instance of a
// class named after the Go type, with one field per struct field under
// encoding/json's naming rules (json tags, "-", promoted embedded fields),
// in declaration order; every field is present (omitempty does not drop
// one), a nil pointer field is None. The instance supports attribute
// access, repr, ==, dataclasses.is_dataclass and attribute assignment;
// reading a field it does not have raises AttributeError unless the host
// answers it (see runtime.ObjectHandler).
//
// The class is host-defined and identified by [GoClassID], so every value of
// one Go type has the same class in Python (type(a) is type(b)); each
// instance gets a fresh random identity. A dataclass instance the code
// returns or passes to a host function converts back with [Into] or
// [IntoStrict] (which refuses fields the struct does not have).
func Dataclass(x any) (Value, error) {
	return goConv{dataclasses: true}.fromGo(x, 0)
}

// GoClassID is the identity of the host class [Dataclass] makes for a Go
// struct type: derived from the type's package path and name, so it is the
// same in every process.
func GoClassID(t reflect.Type) UUID {
	return NameUUID("monty-go dataclass", t.PkgPath(), t.String())
}

// NameUUID derives a UUID (version 8) from names: the same names give the
// same UUID in every process, different ones practically never do. Hosts
// use it for identities that must survive a restart, such as a host class
// or object an earlier process gave a session.
func NameUUID(names ...string) UUID {
	sum := sha256.Sum256([]byte(strings.Join(names, "\x00")))
	var u UUID
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	return u
}

// NewUUID returns a random (version 4) UUID, as the identities of
// Dataclass instances are.
func NewUUID() UUID {
	var u UUID
	_, _ = rand.Read(u[:]) // never fails (crypto/rand panics instead)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// GoClassName is the Python class name for a Go type: its name without
// package or type arguments ("Point" for geo.Point[float64]), or "Struct"
// for an unnamed struct type.
func GoClassName(t reflect.Type) string {
	name, _, _ := strings.Cut(t.Name(), "[")
	if name == "" {
		return "Struct"
	}
	return name
}

func (c goConv) dataclass(rv reflect.Value, depth int) (Value, error) {
	t := rv.Type()
	info := fieldsOf(t)
	attrs := make([]Pair, 0, len(info.fields))
	for _, f := range info.fields {
		var v Value = None{}
		if fv, err := rv.FieldByIndexErr(f.index); err == nil {
			if v, err = c.fromReflect(fv, depth+1); err != nil {
				return nil, prefixPath(err, "."+t.FieldByIndex(f.index).Name)
			}
		}
		attrs = append(attrs, Pair{Key: Str(f.name), Value: v})
	}
	class := ClassType{Name: GoClassName(t), ID: GoClassID(t), HostDefined: true, IsDataclass: true}
	return Instance{Class: class, ID: NewUUID(), Attrs: attrs}, nil
}

// IntoStrict is Into, except that a dict, instance or named tuple converted
// to a struct may only hold the struct's fields: a key or attribute the
// struct does not have (matched as Into matches them) is a
// *ConversionError naming it and the fields the struct has, at any depth.
// Use it where a misspelt field must not be dropped silently, such as a
// dataclass or dict the code passes to a host function.
func IntoStrict(v Value, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("object: IntoStrict needs a non-nil pointer, got %T", dst)
	}
	if err := checkKnown(v, rv.Type().Elem(), 0); err != nil {
		return err
	}
	return into(v, rv.Elem(), 0)
}

// checkKnown reports the first key or attribute of v that has no field in
// the struct it would convert to.
func checkKnown(v Value, t reflect.Type, depth int) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if depth > MaxDepth {
		return nil // into reports the depth
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType || t == bigIntType {
			return nil
		}
		return checkStruct(v, t, depth)
	case reflect.Slice, reflect.Array:
		items, ok := itemsOf(v)
		if !ok {
			return nil
		}
		for i, item := range items {
			if err := checkKnown(item, t.Elem(), depth+1); err != nil {
				return prefixPath(err, indexSeg(i))
			}
		}
	case reflect.Map:
		ps, attrs, ok := entries(v)
		if !ok {
			return nil
		}
		for _, p := range ps {
			if err := checkKnown(p.Value, t.Elem(), depth+1); err != nil {
				return prefixPath(err, entrySeg(p.Key, attrs))
			}
		}
	}
	return nil
}

func checkStruct(v Value, t reflect.Type, depth int) error {
	info := fieldsOf(t)
	unknown := func(name string) error {
		names := make([]string, len(info.fields))
		for i, f := range info.fields {
			names[i] = f.name
		}
		return &ConversionError{Want: t.String(), Got: kindOf(v),
			Detail: fmt.Sprintf("unknown field %q (%s has %s)", name, GoClassName(t), strings.Join(names, ", "))}
	}
	check := func(name string, x Value, seg string) error {
		f, ok := info.lookup(name)
		if !ok {
			return unknown(name)
		}
		if err := checkKnown(x, t.FieldByIndex(f.index).Type, depth+1); err != nil {
			return prefixPath(err, seg)
		}
		return nil
	}
	if nt, ok := v.(NamedTuple); ok {
		for i, name := range nt.Fields {
			if i < len(nt.Values) {
				if err := check(name, nt.Values[i], "."+name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	ps, attrs, ok := entries(v)
	if !ok {
		return nil
	}
	for _, p := range ps {
		k, ok := p.Key.(Str)
		if !ok {
			return &ConversionError{Want: t.String(), Got: kindOf(v), Detail: "field names must be str, not " + p.Key.Kind().String()}
		}
		if err := check(string(k), p.Value, entrySeg(k, attrs)); err != nil {
			return err
		}
	}
	return nil
}
