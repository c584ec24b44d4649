package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/monty-go/monty/object"
)

// ParamType is the JSON-schema type of a parameter or of a return value
// (Schema.ReturnType). The empty type accepts any value.
type ParamType string

// Parameter types, named as JSON schema names them.
const (
	Any     ParamType = ""
	String  ParamType = "string"
	Integer ParamType = "integer"
	Number  ParamType = "number"
	Boolean ParamType = "boolean"
	Array   ParamType = "array"
	Object  ParamType = "object"
)

// Null is the return type of a function that returns None. It is meant for
// Schema.ReturnType only: Registry.Register refuses a parameter of type
// Null, like any other unknown parameter type.
const Null ParamType = "null"

// pyName is the Python type a parameter of type t takes, as signatures and
// TypeErrors name it.
func (t ParamType) pyName() string {
	switch t {
	case String:
		return "str"
	case Integer:
		return "int"
	case Number:
		return "float"
	case Boolean:
		return "bool"
	case Array:
		return "list"
	case Object:
		return "dict"
	}
	return ""
}

// accepts reports whether a Python value fits the type. Bool is not an
// integer here (JSON schema keeps them apart), but an int is a number.
func (t ParamType) accepts(v object.Value) bool {
	switch t {
	case Any:
		return true
	case String:
		return v.Kind() == object.KindStr
	case Integer:
		k := v.Kind()
		return k == object.KindInt || k == object.KindBigInt
	case Number:
		k := v.Kind()
		return k == object.KindInt || k == object.KindBigInt || k == object.KindFloat
	case Boolean:
		return v.Kind() == object.KindBool
	case Array:
		switch v.Kind() {
		case object.KindList, object.KindTuple, object.KindSet, object.KindFrozenSet:
			return true
		}
	case Object:
		switch v.Kind() {
		case object.KindDict, object.KindInstance, object.KindNamedTuple:
			return true
		}
	}
	return false
}

// valid reports whether t is a parameter type; Null is not one.
func (t ParamType) valid() bool {
	switch t {
	case Any, String, Integer, Number, Boolean, Array, Object:
		return true
	}
	return false
}

// validReturn reports whether t is a return type: a parameter type or Null.
func (t ParamType) validReturn() bool { return t == Null || t.valid() }

// Param describes one parameter of a host function. Python code may pass
// it by position (in the order of Schema.Params) or by keyword (Name).
type Param struct {
	// Name is the keyword name; it must be a Python identifier.
	Name string
	// Type is the JSON-schema type; arguments of another type raise
	// TypeError before the function runs. Func infers it from the Go
	// parameter when empty.
	Type ParamType
	// Description tells a model what the parameter means.
	Description string
	// Optional makes the parameter optional. A parameter with a Default is
	// optional too; every other parameter is required (JSON schema's
	// "required").
	Optional bool
	// Schema, when set, is the parameter's JSON schema, from which the
	// type checker's stubs derive its annotation (Literal for an enum,
	// TypedDict for an object with properties, list[...] for an array of
	// items); Type still decides what the runtime accepts.
	Schema json.RawMessage
	// Default is the value an omitted optional argument takes, as a Go
	// value convertible with object.FromGo; nil means none (the function
	// sees the argument as absent, or the Go zero value with Func). Passing
	// None for an optional parameter is the same as omitting it.
	Default any
}

// Required reports whether the parameter must be given.
func (p Param) Required() bool { return !p.Optional && p.Default == nil }

// Schema describes a host function to Python code and to models.
type Schema struct {
	// Name is the name Python code calls; it must be a Python identifier.
	Name string
	// Description says what the function does.
	Description string
	// Params lists the parameters in positional order.
	Params []Param
	// Returns describes the return value.
	Returns string
	// ReturnType is the JSON-schema type of the return value, which the
	// type checker's stubs (Registry.Stubs) declare: Any means unknown (any
	// value), Null that the function returns None, Array a list and Object
	// a dict. Func infers it from the Go result type when empty. It is not
	// checked when the function runs, and Tool and JSONSchema leave it out.
	ReturnType ParamType
	// ReturnSchema, when set, is the JSON schema of the return value, from
	// which the stubs derive its annotation instead of ReturnType's.
	ReturnSchema json.RawMessage
	// Category groups functions for list_functions and help; empty means
	// DefaultCategory.
	Category string
}

// DefaultCategory is the category of functions registered without one.
const DefaultCategory = "general"

// Signature renders the schema as a Python signature with annotations,
// such as "get_weather(city: str, units: str = 'metric')".
func (s Schema) Signature() string {
	parts := make([]string, len(s.Params))
	for i, p := range s.Params {
		b := p.Name
		if py := p.Type.pyName(); py != "" {
			b += ": " + py
		}
		switch {
		case p.Default != nil:
			d := "..."
			if v, err := object.FromGo(p.Default); err == nil {
				d = object.Repr(v)
			}
			b += " = " + d
		case p.Optional:
			b += " = None"
		}
		parts[i] = b
	}
	return s.Name + "(" + strings.Join(parts, ", ") + ")"
}

// Help is the text help(name) shows: signature, description, parameters
// and return value.
func (s Schema) Help() string {
	var b strings.Builder
	b.WriteString(s.Signature())
	if s.Description != "" {
		b.WriteString("\n\n" + indent(s.Description))
	}
	if len(s.Params) > 0 {
		b.WriteString("\n\n    Args:")
		for _, p := range s.Params {
			fmt.Fprintf(&b, "\n        %s", p.Name)
			if p.Required() {
				b.WriteString(" (required)")
			}
			if p.Description != "" {
				b.WriteString(": " + p.Description)
			}
		}
	}
	if s.Returns != "" {
		b.WriteString("\n\n    Returns:\n        " + s.Returns)
	}
	return b.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// JSONSchema returns the parameters as a JSON schema object:
// {"type": "object", "properties": {...}, "required": [...]}.
func (s Schema) JSONSchema() json.RawMessage {
	type prop struct {
		Type        ParamType `json:"type,omitempty"`
		Description string    `json:"description,omitempty"`
		Default     any       `json:"default,omitempty"`
	}
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i, p := range s.Params {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(p.Name)
		body, err := json.Marshal(prop{p.Type, p.Description, p.Default})
		if err != nil { // a default JSON cannot carry: leave it out
			body, _ = json.Marshal(prop{Type: p.Type, Description: p.Description})
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(body)
		if p.Required() {
			required = append(required, p.Name)
		}
	}
	b.WriteByte('}')
	if len(required) > 0 {
		r, _ := json.Marshal(required)
		b.WriteString(`,"required":`)
		b.Write(r)
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}

// Tool returns the schema as a tool definition a model can be offered
// directly.
func (s Schema) Tool() Tool {
	return Tool{Name: s.Name, Description: s.Description, Parameters: s.JSONSchema()}
}

// Tool is a tool definition in the shape LLM APIs, MCP and AG-UI share:
// a name, a description and a JSON schema of the parameters.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}
