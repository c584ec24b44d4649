package object

import (
	"reflect"
	"slices"
	"strings"
	"sync"
)

// structField is a struct field as encoding/json sees it: its JSON name and
// the index path to it through embedded structs.
type structField struct {
	name      string
	index     []int
	omitEmpty bool
	omitZero  bool
}

// structInfo lists a struct type's fields in declaration order.
type structInfo struct {
	fields []structField
	byName map[string]int
}

// lookup returns the field for a key: an exact name match, else a
// case-insensitive one, as encoding/json does.
func (s *structInfo) lookup(key string) (*structField, bool) {
	if i, ok := s.byName[key]; ok {
		return &s.fields[i], true
	}
	for i := range s.fields {
		if strings.EqualFold(s.fields[i].name, key) {
			return &s.fields[i], true
		}
	}
	return nil, false
}

var structCache sync.Map // reflect.Type -> *structInfo

// fieldsOf returns the fields of struct type t under encoding/json's rules:
// exported fields named by their json tag (or Go name), "-" skipped, fields
// of untagged embedded structs promoted, and of several fields with one name
// the shallowest wins, then the only tagged one; otherwise none does.
func fieldsOf(t reflect.Type) *structInfo {
	if s, ok := structCache.Load(t); ok {
		return s.(*structInfo)
	}
	type candidate struct {
		structField
		tagged bool
	}
	var all []candidate
	var walk func(t reflect.Type, index []int, visiting map[reflect.Type]bool)
	walk = func(t reflect.Type, index []int, visiting map[reflect.Type]bool) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clip(index), i)
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					// An unexported embedded pointer cannot be allocated by Into.
					if (sf.IsExported() || sf.Type.Kind() != reflect.Pointer) && !visiting[ft] {
						visiting[ft] = true
						walk(ft, idx, visiting)
						delete(visiting, ft)
					}
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			f := candidate{structField: structField{name: name, index: idx}, tagged: name != ""}
			if name == "" {
				f.name = sf.Name
			}
			for opt := range strings.SplitSeq(opts, ",") {
				f.omitEmpty = f.omitEmpty || opt == "omitempty"
				f.omitZero = f.omitZero || opt == "omitzero"
			}
			all = append(all, f)
		}
	}
	walk(t, nil, map[reflect.Type]bool{t: true})

	// Group by name, shallowest first and tagged first within a depth.
	slices.SortStableFunc(all, func(a, b candidate) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return 0
	})
	info := &structInfo{byName: map[string]int{}}
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].name == all[i].name {
			j++
		}
		group := all[i:j]
		if len(group) == 1 || len(group[1].index) > len(group[0].index) ||
			group[0].tagged && !group[1].tagged {
			info.fields = append(info.fields, group[0].structField)
		}
		i = j
	}
	slices.SortFunc(info.fields, func(a, b structField) int { return slices.Compare(a.index, b.index) })
	for i, f := range info.fields {
		info.byName[f.name] = i
	}
	s, _ := structCache.LoadOrStore(t, info)
	return s.(*structInfo)
}
