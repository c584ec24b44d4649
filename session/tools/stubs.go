package tools

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
)

// Python stubs: the host functions as a .pyi module for the type checker,
// which star-imports it into the code it checks, so that a wrong argument
// type, a missing or unknown argument, or an async function used without
// await is reported before the code runs.
//
// The stubs describe what the runtime accepts (bind), as closely as
// Python's annotations can:
//
//   - every parameter is positional-or-keyword, in schema order;
//   - a parameter that is not required also accepts None, which the runtime
//     treats as omitting it (so `units: str | None = 'metric'`);
//   - a required parameter after an optional one, which a def cannot
//     express, gets overloads that together accept exactly the calls the
//     runtime binds (see signatures);
//   - a name Python cannot use as a parameter (a keyword such as class)
//     turns the parameters into *args: Any, **kwargs: Any.
//
// What remains imprecise: bool is an int and int a float to the checker
// but not to the runtime's Integer and Number (lenient), and the runtime
// lets an Object parameter take any dict, class instance or named tuple
// that converts, where the stub says dict[str, Any] (strict).

// pythonKeywords are the names Python's grammar reserves, plus __debug__,
// which cannot be bound either: a def cannot use them as its name or a
// parameter's. Soft keywords (match, case, type, _) are ordinary names.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true,
	"assert": true, "async": true, "await": true, "break": true, "class": true,
	"continue": true, "def": true, "del": true, "elif": true, "else": true,
	"except": true, "finally": true, "for": true, "from": true, "global": true,
	"if": true, "import": true, "in": true, "is": true, "lambda": true,
	"nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
	"__debug__": true,
}

// IsIdentifier reports whether name can be bound by a def, as a function or a
// parameter name.
func IsIdentifier(name string) bool { return identifier.MatchString(name) && !pythonKeywords[name] }

// PythonName is the Python name of an MCP tool or argument name: each
// character that cannot be part of an identifier becomes "_", leading
// underscores are dropped (such names never reach the host), "tool_" goes
// before a name that would start with a digit or be empty, and "_" after
// a keyword: get-sum becomes get_sum, 2fa tool_2fa, class class_.
func PythonName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "tool_" + s
	}
	if pythonKeywords[s] {
		s += "_"
	}
	return s
}

// typingNames and builtinNames are the names stub annotations use.
var (
	typingNames  = []string{"Any", "Literal", "NotRequired", "TypedDict", "overload"}
	builtinNames = []string{"bool", "dict", "float", "frozenset", "int", "list", "object", "set", "str", "tuple"}
)

// stubNames spells the names annotations use. A stub module that defines a
// function named like one of them (a host function called set, say) would
// shadow it for every annotation in the module, so such names are
// qualified with an alias of their module instead. The zero value spells
// every name plainly.
type stubNames struct {
	shadowed map[string]bool // names the stub module defines
	typing   string          // alias of the typing module, for shadowed typing names
	builtins string          // alias of the builtins module, for shadowed builtins
	// types renders parameters and results described by a JSON schema
	// (Param.Schema, Schema.ReturnSchema); nil renders them by their
	// ParamType.
	types *schemaTypes
}

// newStubNames returns the spelling for a module defining the names in
// defined.
func newStubNames(defined map[string]bool) stubNames {
	n := stubNames{shadowed: map[string]bool{}}
	alias := func(base string) string {
		for defined[base] {
			base += "_"
		}
		return base
	}
	for _, s := range typingNames {
		if defined[s] {
			n.shadowed[s] = true
			n.typing = alias("_typing")
		}
	}
	for _, s := range builtinNames {
		if defined[s] {
			n.shadowed[s] = true
			n.builtins = alias("_builtins")
		}
	}
	return n
}

// name spells the typing or builtins name s.
func (n stubNames) name(s string) string {
	if !n.shadowed[s] {
		return s
	}
	if slices.Contains(typingNames, s) {
		return n.typing + "." + s
	}
	return n.builtins + "." + s
}

// header is the import block for a module whose functions use overload
// when overload is set, and the typing names in used.
func (n stubNames) header(overload bool, used map[string]bool) string {
	var from []string
	var b strings.Builder
	for _, s := range typingNames {
		if s != "Any" && !used[s] && (s != "overload" || !overload) || n.shadowed[s] {
			continue
		}
		from = append(from, s)
	}
	if len(from) > 0 {
		b.WriteString("from typing import " + strings.Join(from, ", ") + "\n")
	}
	if n.typing != "" {
		b.WriteString("import typing as " + n.typing + "\n")
	}
	if n.builtins != "" {
		b.WriteString("import builtins as " + n.builtins + "\n")
	}
	return b.String()
}

// param is the annotation of a parameter of type t. The runtime accepts
// any of the four collection kinds for Array.
func (n stubNames) param(t ParamType) string {
	switch t {
	case String, Integer, Number, Boolean:
		return n.name(t.pyName())
	case Array:
		a := n.name("Any")
		return fmt.Sprintf("%s[%s] | %s[%s, ...] | %s[%s] | %s[%s]",
			n.name("list"), a, n.name("tuple"), a, n.name("set"), a, n.name("frozenset"), a)
	case Object:
		return n.name("dict") + "[" + n.name("str") + ", " + n.name("Any") + "]"
	}
	return n.name("Any")
}

// result is the return annotation for type t. Unlike a parameter, an Array
// result is a list: what object.FromGo makes of a Go slice, and JSON's
// arrays. The union a parameter takes would make the checker refuse
// indexing or appending to the result.
func (n stubNames) result(t ParamType) string {
	switch t {
	case Null:
		return "None"
	case Array:
		return n.name("list") + "[" + n.name("Any") + "]"
	}
	return n.param(t)
}

// Stub returns the function as a Python stub definition for the type
// checker, such as
//
//	def get_weather(city: str, units: str | None = 'metric') -> dict[str, Any]:
//	    """Current weather for a city."""
//
// (async def when f.Async), with the description as the docstring, or
// "..." as the body when there is none. It assumes `from typing import Any`
// and, when the definition is a group of overloads, overload; Registry.Stubs
// writes a whole module.
//
// Parameters are positional-or-keyword in schema order and typed by their
// Type: str, int, float, bool, list[Any] | tuple[Any, ...] | set[Any] |
// frozenset[Any] for Array, dict[str, Any] for Object, Any for Any. A
// parameter that is not required also accepts None, as the runtime does,
// and defaults to its Default (a None, bool, int, float or str shown as its
// repr, any other Default as ...) or None. The return annotation follows
// ReturnType: None for Null, list[Any] for Array.
//
// A required parameter after an optional one cannot be written in one def
// (Python wants no non-default parameter after a default one). Rather than
// loosen or tighten the signature, Stub writes overloads that accept
// exactly the calls the runtime binds: one where every parameter up to the
// last required one is given, and for each optional parameter before it one
// where that parameter is the first omitted, so the parameters before it
// are given and the ones after it can only be passed by keyword.
//
// A function whose name is not a Python identifier (or is a keyword)
// cannot be called from Python; its stub is a comment saying so. Parameter
// names Python cannot declare (a keyword such as class, or a name given
// twice) make the parameters *args: Any, **kwargs: Any. Either way the
// result is valid Python.
func (f Function) Stub() string { return f.stub(stubNames{}) }

// stub renders the stub with the names spelled by n.
func (f Function) stub(n stubNames) string {
	if !IsIdentifier(f.Name) {
		return fmt.Sprintf("# %s is not a Python identifier: Python code cannot call it", strconv.QuoteToASCII(f.Name))
	}
	sigs := f.signatures(n)
	def := "def "
	if f.Async {
		def = "async def "
	}
	ret := n.result(f.ReturnType)
	if len(f.ReturnSchema) > 0 && n.types != nil {
		ret = n.types.annotation(f.ReturnSchema, f.Name+"_result")
	}
	var b strings.Builder
	for i, params := range sigs {
		if i > 0 {
			b.WriteByte('\n')
		}
		if len(sigs) > 1 {
			b.WriteString("@" + n.name("overload") + "\n")
		}
		fmt.Fprintf(&b, "%s%s(%s) -> %s:", def, f.Name, params, ret)
		if i == 0 && f.Description != "" {
			b.WriteString("\n    " + docstring(f.Description))
		} else {
			b.WriteString(" ...")
		}
	}
	return b.String()
}

// overloaded reports whether the stub of f is a group of overloads.
func (f Function) overloaded() bool {
	return IsIdentifier(f.Name) && len(f.signatures(stubNames{})) > 1
}

// signatures returns the parameter lists of the stub: one, or one per
// overload when a required parameter follows an optional one.
//
// With parameters p0..pn-1 of which pR is the last required one, a call
// the runtime binds either gives every parameter up to pR (positionally or
// by keyword), or omits some optional pj before pR. In the second case let
// pj be the first one omitted: the positional arguments stop before it, so
// p0..pj-1 are given and the parameters after pj can only come by keyword.
// The first overload is the first case; each optional pj before pR adds
// `(p0, ..., pj-1, *, pj+1, ..., pn-1)`, where keyword-only parameters
// keep their defaults in any order. Together they accept exactly the calls
// the runtime binds, and each overload on its own is a valid def.
func (f Function) signatures(n stubNames) []string {
	seen := map[string]bool{}
	for _, p := range f.Params {
		if !IsIdentifier(p.Name) || seen[p.Name] {
			a := n.name("Any")
			return []string{"*args: " + a + ", **kwargs: " + a}
		}
		seen[p.Name] = true
	}
	last := -1 // the last required parameter
	for i, p := range f.Params {
		if p.Required() {
			last = i
		}
	}
	var early []int // optional parameters before the last required one
	for i, p := range f.Params[:last+1] {
		if !p.Required() {
			early = append(early, i)
		}
	}
	// given renders parameter i when the overload requires it.
	given := func(i int) string {
		p := f.Params[i]
		if p.Required() {
			return p.Name + ": " + n.paramOf(f.Name, p)
		}
		return p.Name + ": " + n.orNoneOf(f.Name, p)
	}
	all := make([]string, len(f.Params))
	for i := range f.Params {
		if i <= last {
			all[i] = given(i)
		} else {
			all[i] = f.Params[i].stubParam(n, f.Name)
		}
	}
	sigs := []string{strings.Join(all, ", ")}
	for _, j := range early {
		parts := make([]string, 0, len(f.Params)+1)
		for i := range j {
			parts = append(parts, given(i))
		}
		parts = append(parts, "*")
		for _, p := range f.Params[j+1:] {
			parts = append(parts, p.stubParam(n, f.Name))
		}
		sigs = append(sigs, strings.Join(parts, ", "))
	}
	return sigs
}

// stubParam renders parameter p of function fn as a def declares it.
func (p Param) stubParam(n stubNames, fn string) string {
	if p.Required() {
		return p.Name + ": " + n.paramOf(fn, p)
	}
	d := "None"
	if p.Default != nil {
		d = defaultRepr(p.Default)
	}
	return p.Name + ": " + n.orNoneOf(fn, p) + " = " + d
}

// paramOf is the annotation of parameter p of function fn: from its
// Schema when it has one, else its Type.
func (n stubNames) paramOf(fn string, p Param) string {
	if len(p.Schema) > 0 && n.types != nil {
		return n.types.annotation(p.Schema, fn+"_"+p.Name)
	}
	return n.param(p.Type)
}

// orNoneOf is paramOf for a parameter that also takes None.
func (n stubNames) orNoneOf(fn string, p Param) string {
	a := n.paramOf(fn, p)
	if a == n.name("Any") || strings.HasSuffix(a, "| None") || a == "None" {
		return a
	}
	return a + " | None"
}

// defaultRepr renders a default as a Python literal when it is None, a
// bool, an int, a finite float or a str, and as ... otherwise.
func defaultRepr(d any) string {
	v, err := object.FromGo(d)
	if err != nil {
		return "..."
	}
	switch v.Kind() {
	case object.KindFloat:
		if f := float64(v.(object.Float)); math.IsInf(f, 0) || math.IsNaN(f) {
			return "..." // repr gives inf and nan, which are not literals
		}
	case object.KindNone, object.KindBool, object.KindInt, object.KindBigInt, object.KindStr:
	default:
		return "..."
	}
	return object.Repr(v)
}

// docstring renders s as a triple-quoted Python string literal for a def
// body indented by four spaces: later lines are indented like the body,
// and a multi-line docstring closes on a line of its own. Backslashes are
// doubled, a quote is escaped when another quote or the closing quotes
// follow it (so no run of three can end the literal early), and the
// characters Python source cannot hold or might take for a line break are
// escaped, so any text yields a valid literal.
func docstring(s string) string {
	var b strings.Builder
	b.WriteString(`"""`)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`) // not UTF-8
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			if i == len(s) || s[i] == '"' {
				b.WriteByte('\\')
			}
			b.WriteByte('"')
		case r == '\n':
			b.WriteByte('\n')
			if i == len(s) || s[i] != '\n' { // no indentation on empty lines
				b.WriteString("    ")
			}
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteByte('\t')
		case r < 0x20 || r == 0x7f || r == 0x85:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	if strings.Contains(s, "\n") && !strings.HasSuffix(s, "\n") {
		b.WriteString("\n    ")
	}
	b.WriteString(`"""`)
	return b.String()
}

// Stubs returns a Python stub module (.pyi) declaring every registered
// function, class and global, for the type checker to star-import into the
// code it checks: an import block (from typing import Any, plus overload
// when a stub needs it), then each function's Stub in the order of
// Schemas, each class (its attributes as annotations, its methods as defs
// taking self) by name, the globals (a host object as its class, anything
// else Any), then the introspection built-ins every Host adds:
//
//	def list_functions(category: str | None = None) -> list[dict[str, Any]]: ...
//	def help(name: object | None = None) -> str | None: ...
//
// Definitions are separated by blank lines. A function named like a name
// the annotations use (a host function called set or Any) would shadow it,
// so the module then imports typing or builtins under an alias and
// qualifies that name. The output depends only on what is registered.
func (r *Registry) Stubs() string {
	fns, classes := r.sorted(), r.sortedClasses()
	defined := map[string]bool{ListFunctionsName: true, HelpName: true}
	overload := false
	for _, f := range fns {
		if IsIdentifier(f.Name) {
			defined[f.Name] = true
		}
		overload = overload || f.overloaded()
	}
	for _, g := range r.hostGlobals() {
		defined[string(g.Key.(object.Str))] = true
	}
	namespaces := r.namespaceClasses()
	for _, c := range append(slices.Clone(classes), namespaces...) {
		defined[c.Name] = true
		for _, m := range c.Methods {
			overload = overload || m.overloaded()
		}
	}
	for _, c := range namespaces {
		defined[namespaceStubClass(c.Name)] = true
	}
	n := newStubNames(defined)
	n.types = newSchemaTypes(n, defined)
	var b strings.Builder
	for _, f := range fns {
		b.WriteString("\n" + f.stub(n) + "\n")
	}
	for _, c := range classes {
		b.WriteString("\n" + c.stub(n, c.Name) + "\n")
	}
	// A namespace is an object: its class is declared under a private
	// name, and the namespace as an object of it.
	for _, c := range namespaces {
		b.WriteString("\n" + c.stub(n, namespaceStubClass(c.Name)) + "\n")
		fmt.Fprintf(&b, "\n%s: %s\n", c.Name, namespaceStubClass(c.Name))
	}
	if globals := r.hostGlobals(); len(globals) > 0 {
		b.WriteString("\n")
		for _, g := range globals {
			t := n.name("Any")
			if in, ok := g.Value.(object.Instance); ok && in.Class.HostDefined && defined[in.Class.Name] {
				t = in.Class.Name
			}
			fmt.Fprintf(&b, "%s: %s\n", g.Key.(object.Str), t)
		}
	}
	str, a := n.name("str"), n.name("Any")
	fmt.Fprintf(&b, "\ndef %s(category: %s | None = None) -> %s[%s[%s, %s]]:\n    %s\n",
		ListFunctionsName, str, n.name("list"), n.name("dict"), str, a,
		docstring("List the host functions you can call."))
	fmt.Fprintf(&b, "\ndef %s(name: %s | None = None) -> %s | None:\n    %s\n",
		HelpName, n.name("object"), str,
		docstring("Show how to call a host function or use a host object, or list them all."))
	// The types the schemas need come first: the definitions use them.
	return n.header(overload, n.types.used) + n.types.declarations() + b.String()
}

// namespaceStubClass is the name the stubs give the class of namespace
// name (private, so that the code cannot name it).
func namespaceStubClass(name string) string { return "_" + name + "_tools" }

// stub renders a host class under the name class: its attributes as
// annotations, its methods as defs taking self.
func (c *Class) stub(n stubNames, class string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class %s:", class)
	if c.Description != "" {
		b.WriteString("\n    " + docstring(c.Description))
	} else if len(c.Attributes)+len(c.Methods) == 0 {
		b.WriteString(" ...")
	}
	for _, a := range c.Attributes {
		t := n.result(a.Type)
		if a.Optional && t != n.name("Any") {
			t += " | None"
		}
		fmt.Fprintf(&b, "\n    %s: %s", a.Name, t)
	}
	for _, m := range c.Methods {
		for line := range strings.Lines(m.stub(n)) {
			for _, def := range []string{"def ", "async def "} {
				if rest, ok := strings.CutPrefix(line, def+m.Name+"("); ok {
					self := "self, "
					if strings.HasPrefix(rest, ")") {
						self = "self"
					}
					line = def + m.Name + "(" + self + rest
				}
			}
			b.WriteString("\n    " + strings.TrimSuffix(line, "\n"))
		}
	}
	return b.String()
}
