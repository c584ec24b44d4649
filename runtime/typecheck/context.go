package typecheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/monty-go/monty/object"
)

// Context is what the earlier snippets of a REPL or session defined, so
// that the next snippet is checked against its own functions, classes,
// variables and imports. Commit each snippet that ran successfully; Apply
// adds the context to the next request. The zero value is an empty
// context. A Context is a value; it is not safe for concurrent use.
//
// The earlier snippets are checked with the new one as code that precedes
// it, in the same module, so that a variable assigned earlier can be
// assigned again with another value, as it can at run time (as stubs,
// every earlier assignment would fix the name's type: upstream's worker
// refuses `x = 'a'` after `x = 1`); their own problems are not reported. A check therefore analyses the whole history again,
// which salsa's caches make cheaper but not free: a very long session
// checks more slowly than a short one.
type Context struct {
	// Code is every committed snippet, in order.
	Code string `json:"code,omitempty"`
}

// Apply adds the context to req: the committed snippets run before
// req.Prelude, after the names of req.Stubs are imported. A diagnostic
// that points into them (a function defined in an earlier snippet, say)
// shows them in the stubs file (StubsPath), after the stubs, where
// upstream Monty's worker appends each snippet.
func (c Context) Apply(req *Request) {
	if c.Code == "" {
		return
	}
	req.Prelude = joinLines(c.Code, req.Prelude)
}

// Commit records a snippet that ran successfully.
func (c *Context) Commit(code string) { c.Code = joinLines(c.Code, code) }

// joinLines appends b to a on a new line.
func joinLines(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case strings.HasSuffix(a, "\n"):
		return a + b
	}
	return a + "\n" + b
}

// Declarations renders a program's inputs as stub declarations
// ("name: int"), so code using them is checked against their types. A
// value whose type the stubs cannot name precisely is declared Any.
func Declarations(inputs map[string]object.Value) string {
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("from typing import Any\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s: %s\n", n, pyType(inputs[n]))
	}
	return b.String()
}

// identifier matches the class names a declaration may use.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// pyType names the static type of a value.
func pyType(v object.Value) string {
	if v == nil {
		return "Any"
	}
	switch v.Kind() {
	case object.KindNone:
		return "None"
	case object.KindBool:
		return "bool"
	case object.KindInt, object.KindBigInt:
		return "int"
	case object.KindFloat:
		return "float"
	case object.KindComplex:
		return "complex"
	case object.KindStr:
		return "str"
	case object.KindBytes:
		return "bytes"
	case object.KindList:
		return "list[Any]"
	case object.KindTuple:
		return "tuple[Any, ...]"
	case object.KindDict:
		return "dict[Any, Any]"
	case object.KindSet:
		return "set[Any]"
	case object.KindFrozenSet:
		return "frozenset[Any]"
	case object.KindInstance:
		// A host object is an instance of its host class, which the
		// stubs may describe (tools.Registry.Stubs does).
		if in := v.(object.Instance); in.Class.HostDefined && identifier.MatchString(in.Class.Name) {
			return in.Class.Name
		}
	}
	return "Any"
}
