package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/monty-go/monty/object"
)

// schemaTypes renders JSON schemas as Python annotations for the stubs:
//
//   - "string", "integer", "number", "boolean", "null" are str, int,
//     float, bool, None; a list of types, anyOf and oneOf are unions;
//   - an enum or const of strings, integers, booleans and null is a
//     Literal (an enum with other values is Any);
//   - an array is list[items];
//   - an object with properties is a TypedDict declared before the
//     definitions (its required properties required, the others
//     NotRequired); an object without is dict[str, additionalProperties];
//   - anything else ($ref, an unknown type) is Any.
//
// Nesting deeper than maxSchemaDepth is Any.
type schemaTypes struct {
	n       stubNames
	defined map[string]bool // names the module defines, TypedDicts included
	decls   []string
	used    map[string]bool // the typing names the annotations use
}

// maxSchemaDepth bounds the nesting of schemas rendered as annotations.
const maxSchemaDepth = 8

func newSchemaTypes(n stubNames, defined map[string]bool) *schemaTypes {
	return &schemaTypes{n: n, defined: defined, used: map[string]bool{}}
}

// declarations are the TypedDicts the annotations use, a line each.
func (g *schemaTypes) declarations() string {
	if len(g.decls) == 0 {
		return ""
	}
	return "\n" + strings.Join(g.decls, "\n") + "\n"
}

// annotation renders raw; hint names the TypedDicts it declares.
func (g *schemaTypes) annotation(raw json.RawMessage, hint string) string {
	var s any
	if json.Unmarshal(raw, &s) != nil {
		return g.n.name("Any")
	}
	return g.render(s, hint, 0)
}

func (g *schemaTypes) typing(name string) string {
	g.used[name] = true
	return g.n.name(name)
}

func (g *schemaTypes) render(schema any, hint string, depth int) string {
	anyType := g.n.name("Any")
	s, ok := schema.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return anyType
	}
	if c, ok := s["const"]; ok {
		return g.literal([]any{c})
	}
	if e, ok := s["enum"].([]any); ok {
		return g.literal(e)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok {
			parts := make([]string, len(alts))
			for i, a := range alts {
				parts[i] = g.render(a, hint+"_"+strconv.Itoa(i), depth+1)
			}
			return g.union(parts)
		}
	}
	switch t := s["type"].(type) {
	case string:
		return g.single(t, s, hint, depth)
	case []any:
		parts := make([]string, 0, len(t))
		for _, one := range t {
			name, _ := one.(string)
			parts = append(parts, g.single(name, s, hint, depth))
		}
		return g.union(parts)
	case nil:
		if _, ok := s["properties"]; ok {
			return g.single("object", s, hint, depth)
		}
	}
	return anyType
}

// single renders s as a value of the one JSON type t.
func (g *schemaTypes) single(t string, s map[string]any, hint string, depth int) string {
	switch t {
	case "string":
		return g.n.name("str")
	case "integer":
		return g.n.name("int")
	case "number":
		return g.n.name("float")
	case "boolean":
		return g.n.name("bool")
	case "null":
		return "None"
	case "array":
		items := g.n.name("Any")
		if it, ok := s["items"]; ok {
			items = g.render(it, hint+"_item", depth+1)
		}
		return g.n.name("list") + "[" + items + "]"
	case "object":
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 {
			values := g.n.name("Any")
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				values = g.render(ap, hint+"_value", depth+1)
			}
			return g.n.name("dict") + "[" + g.n.name("str") + ", " + values + "]"
		}
		return g.typedDict(s, props, hint, depth)
	}
	return g.n.name("Any")
}

// typedDict declares a TypedDict for an object schema with properties and
// returns its name. The functional form takes any key, not only
// identifiers.
func (g *schemaTypes) typedDict(s, props map[string]any, hint string, depth int) string {
	name := "_" + hint
	for g.defined[name] {
		name += "_"
	}
	g.defined[name] = true
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if k, ok := r.(string); ok {
				required[k] = true
			}
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fields := make([]string, len(keys))
	for i, k := range keys {
		t := g.render(props[k], hint+"_"+PythonName(k), depth+1)
		if !required[k] {
			t = g.typing("NotRequired") + "[" + t + "]"
		}
		fields[i] = strconv.Quote(k) + ": " + t
	}
	g.decls = append(g.decls, fmt.Sprintf("%s = %s(%q, {%s})", name, g.typing("TypedDict"), name, strings.Join(fields, ", ")))
	return name
}

// literal renders an enum: Literal of its values when Python can spell
// them all in one (strings, integers, booleans, None), else Any.
func (g *schemaTypes) literal(values []any) string {
	parts := make([]string, 0, len(values))
	for _, v := range values {
		switch v := v.(type) {
		case nil:
			parts = append(parts, "None")
		case bool, string:
			ov, _ := object.FromGo(v)
			parts = append(parts, object.Repr(ov))
		case float64:
			if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
				return g.n.name("Any")
			}
			parts = append(parts, strconv.FormatInt(int64(v), 10))
		default:
			return g.n.name("Any")
		}
	}
	if len(parts) == 0 {
		return g.n.name("Any")
	}
	return g.typing("Literal") + "[" + strings.Join(parts, ", ") + "]"
}

// union joins alternatives, Any when one of them is.
func (g *schemaTypes) union(parts []string) string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p == g.n.name("Any") {
			return p
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return g.n.name("Any")
	}
	return strings.Join(out, " | ")
}
