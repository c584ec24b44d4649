package main

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// The host side of the test cases, with exactly the semantics of the native
// harness (scripts/native/src/host.rs, whose doc comment is the reference):
// the external functions of call-external cases, host dataclasses with
// methods and lazy attributes, CONST_* names, the /virtual tree, a fixed
// environment, os.urandom, the importable `tools` module, sleeps and
// asyncio.sleep futures, and a no-handler answer for everything else.

var syncFunctions = []string{
	"add_ints", "concat_strings", "return_value", "get_list", "raise_error",
	"make_point", "make_mutable_point", "make_user", "make_empty",
}

var asyncFunctions = []string{"async_call", "async_fail"}

var toolsFunctions = []string{
	"add_ints", "concat_strings", "return_value", "get_list", "raise_error", "async_call", "async_fail",
}

const (
	classIDBase    = 0x100
	toolsID        = 0x7001
	toolsNestedID  = 0x7002
	instanceIDBase = 0x1000
	vfsMtime       = 1_700_000_000.0
)

// env is the environment of call-external cases, in sorted order.
var env = []object.Pair{
	{Key: object.Str("VIRTUAL_EMPTY"), Value: object.Str("")},
	{Key: object.Str("VIRTUAL_HOME"), Value: object.Str("/virtual/home")},
	{Key: object.Str("VIRTUAL_USER"), Value: object.Str("testuser")},
}

// hostClass is one of the host dataclasses.
type hostClass int

const (
	classPoint hostClass = iota
	classMutablePoint
	classUser
	classEmpty
)

func (c hostClass) name() string {
	return [...]string{"Point", "MutablePoint", "User", "Empty"}[c]
}

func uuidOf(n uint64) object.UUID {
	var u object.UUID
	binary.BigEndian.PutUint64(u[8:], n)
	return u
}

// hostInstance is the host's record of an instance it handed out.
type hostInstance struct {
	class  hostClass
	fields []object.Pair
}

func (in hostInstance) int(name string) int64 {
	for _, p := range in.fields {
		if p.Key == object.Str(name) {
			if i, ok := p.Value.(object.Int); ok {
				return int64(i)
			}
		}
	}
	return 0
}

// pending is a future the host settles once ready.
type pending struct {
	callID  uint32
	readyAt time.Time
	result  runtime.FutureResult
}

// host answers the pauses of one case run.
type host struct {
	external     bool
	instances    map[object.UUID]hostInstance
	nextInstance uint64
	vfs          *virtualFS
	mount        runtime.OSHandler // the /mnt mount of mount-fs cases, or nil
	pending      []pending
}

func newHost(external bool, mount runtime.OSHandler) *host {
	return &host{
		external:     external,
		instances:    map[object.UUID]hostInstance{},
		nextInstance: instanceIDBase,
		vfs:          newVirtualFS(),
		mount:        mount,
	}
}

// excError is a Python exception a host function raises.
type excError struct{ typ, msg string }

func (e *excError) Error() string { return e.typ + ": " + e.msg }

func exc(typ, format string, args ...any) *excError {
	return &excError{typ: typ, msg: fmt.Sprintf(format, args...)}
}

// answer turns a value or exception into an Answer.
func answer(v object.Value, err *excError) runtime.Answer {
	if err != nil {
		return runtime.Raise(err.typ, err.msg)
	}
	return runtime.Return(v)
}

func futureResult(id uint32, v object.Value, err *excError) runtime.FutureResult {
	r := runtime.FutureResult{CallID: id, Value: v}
	if err != nil {
		r.Value = nil
		r.Err = &runtime.Exception{Type: err.typ, Message: err.msg}
	}
	return r
}

// call answers a FunctionCall.
func (h *host) call(c *runtime.FunctionCall) runtime.Answer {
	if c.ObjectID != nil {
		return answer(h.method(*c.ObjectID, c.Name, c))
	}
	if !h.external {
		return runtime.NotFound()
	}
	switch c.Name {
	case "async_call":
		args, err := positional(c, 1)
		var v object.Value
		if err == nil {
			v = args[0]
		}
		h.addPending(c.CallID, 0, futureResult(c.CallID, v, err))
		return runtime.Pending()
	case "async_fail":
		h.addPending(c.CallID, 0, futureResult(c.CallID, nil, raiseFromArgs(c)))
		return runtime.Pending()
	}
	if !slices.Contains(syncFunctions, c.Name) {
		return runtime.NotFound()
	}
	if c.Name == "raise_error" {
		return answer(nil, raiseFromArgs(c))
	}
	return answer(h.syncFunction(c))
}

func (h *host) syncFunction(c *runtime.FunctionCall) (object.Value, *excError) {
	switch c.Name {
	case "add_ints":
		args, err := positional(c, 2)
		if err != nil {
			return nil, err
		}
		a, ok1 := args[0].(object.Int)
		b, ok2 := args[1].(object.Int)
		if !ok1 || !ok2 {
			return nil, exc("TypeError", "add_ints expects two ints")
		}
		s := a + b
		if (s > a) != (b > 0) {
			return nil, exc("OverflowError", "add_ints: result does not fit in 64 bits")
		}
		return s, nil
	case "concat_strings":
		args, err := positional(c, 2)
		if err != nil {
			return nil, err
		}
		a, ok1 := args[0].(object.Str)
		b, ok2 := args[1].(object.Str)
		if !ok1 || !ok2 {
			return nil, exc("TypeError", "concat_strings expects two strs")
		}
		return a + b, nil
	case "return_value":
		args, err := positional(c, 1)
		if err != nil {
			return nil, err
		}
		return args[0], nil
	case "get_list":
		if _, err := positional(c, 0); err != nil {
			return nil, err
		}
		return list123(), nil
	case "make_point", "make_mutable_point", "make_empty":
		if _, err := positional(c, 0); err != nil {
			return nil, err
		}
		switch c.Name {
		case "make_point":
			return h.make(classPoint, pointFields(1, 2)), nil
		case "make_mutable_point":
			return h.make(classMutablePoint, pointFields(1, 2)), nil
		}
		return h.make(classEmpty, nil), nil
	case "make_user":
		args, err := positional(c, 1)
		if err != nil {
			return nil, err
		}
		n, ok := args[0].(object.Str)
		if !ok {
			return nil, exc("TypeError", "make_user expects a str")
		}
		return h.make(classUser, []object.Pair{
			{Key: object.Str("name"), Value: n},
			{Key: object.Str("active"), Value: object.Bool(true)},
		}), nil
	}
	return nil, exc("RuntimeError", "unreachable: %s", c.Name)
}

// make builds and records a host instance.
func (h *host) make(class hostClass, fields []object.Pair) object.Value {
	id := uuidOf(h.nextInstance)
	h.nextInstance++
	h.instances[id] = hostInstance{class: class, fields: fields}
	return object.Instance{
		Class: object.ClassType{
			Name:        class.name(),
			ID:          uuidOf(classIDBase + uint64(class)),
			HostDefined: true,
			IsDataclass: true,
		},
		ID:    id,
		Attrs: slices.Clone(fields),
	}
}

// method answers a method call on a host instance.
func (h *host) method(id object.UUID, name string, c *runtime.FunctionCall) (object.Value, *excError) {
	in, ok := h.instances[id]
	if !ok {
		return nil, exc("RuntimeError", "unknown host object for method %s", name)
	}
	point := in.class == classPoint || in.class == classMutablePoint
	switch {
	case point && name == "sum":
		if _, err := positional(c, 0); err != nil {
			return nil, err
		}
		return object.Int(in.int("x") + in.int("y")), nil
	case point && name == "add":
		args, err := positional(c, 2)
		if err != nil {
			return nil, err
		}
		dx, ok1 := args[0].(object.Int)
		dy, ok2 := args[1].(object.Int)
		if !ok1 || !ok2 {
			return nil, exc("TypeError", "add expects two ints")
		}
		return h.make(in.class, pointFields(in.int("x")+int64(dx), in.int("y")+int64(dy))), nil
	case point && name == "scale":
		args, err := positional(c, 1)
		if err != nil {
			return nil, err
		}
		k, ok := args[0].(object.Int)
		if !ok {
			return nil, exc("TypeError", "scale expects an int")
		}
		return h.make(in.class, pointFields(in.int("x")*int64(k), in.int("y")*int64(k))), nil
	case point && name == "describe":
		var label object.Value
		if len(c.Args) > 0 {
			label = c.Args[0]
		} else if v, ok := c.Kwarg("label"); ok {
			label = v
		}
		s, ok := label.(object.Str)
		if !ok {
			return nil, exc("TypeError", "describe expects a str label")
		}
		return object.Str(fmt.Sprintf("%s(%d, %d)", s, in.int("x"), in.int("y"))), nil
	case in.class == classUser && name == "greeting":
		if _, err := positional(c, 0); err != nil {
			return nil, err
		}
		who := ""
		for _, p := range in.fields {
			if p.Key == object.Str("name") {
				if s, ok := p.Value.(object.Str); ok {
					who = string(s)
				}
			}
		}
		return object.Str("Hello, " + who + "!"), nil
	case name == "__call__":
		// Calling the instance itself: these classes define no __call__.
		return nil, exc("TypeError", "'%s' object is not callable", in.class.name())
	}
	return nil, exc("AttributeError", "'%s' object has no attribute '%s'", in.class.name(), name)
}

// lookup answers a NameLookup.
func (h *host) lookup(l *runtime.NameLookup) runtime.Answer {
	if l.ObjectID != nil {
		in, ok := h.instances[*l.ObjectID]
		if !ok {
			return runtime.NotFound()
		}
		point := in.class == classPoint || in.class == classMutablePoint
		switch {
		case point && l.Name == "dimensions":
			return runtime.Return(object.Int(2))
		case in.class == classMutablePoint && l.Name == "boom":
			return runtime.Raise("KeyError", "boom")
		}
		return runtime.NotFound()
	}
	if !h.external {
		return runtime.NotFound()
	}
	switch l.Name {
	case "CONST_INT":
		return runtime.Return(object.Int(42))
	case "CONST_STR":
		return runtime.Return(object.Str("hello"))
	case "CONST_FLOAT":
		return runtime.Return(object.Float(3.14))
	case "CONST_BOOL":
		return runtime.Return(object.Bool(true))
	case "CONST_LIST":
		return runtime.Return(list123())
	case "CONST_NONE":
		return runtime.Return(object.None{})
	}
	if slices.Contains(syncFunctions, l.Name) || slices.Contains(asyncFunctions, l.Name) {
		return runtime.Return(object.Function{Name: l.Name})
	}
	return runtime.NotFound()
}

// externalOS serves the non-path OS calls of call-external cases; ok is
// false for calls it does not serve.
func (h *host) externalOS(c *runtime.OSCall) (runtime.Answer, bool) {
	switch c.Name {
	case "os.getenv":
		key, _ := c.Arg(0, "key")
		if k, ok := key.(object.Str); ok {
			for _, p := range env {
				if p.Key == k {
					return runtime.Return(p.Value), true
				}
			}
		}
		def, ok := c.Arg(1, "default")
		if !ok {
			def = object.None{}
		}
		return runtime.Return(def), true
	case "os.environ":
		return runtime.Return(object.Dict(slices.Clone(env))), true
	case "os.urandom":
		size, _ := c.Arg(0, "size")
		n, ok := size.(object.Int)
		if !ok || n < 0 || n > 1<<20 {
			return runtime.Raise("ValueError", "os.urandom: size too large"), true
		}
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return runtime.Return(object.Bytes(b)), true
	case "import":
		name, _ := c.Arg(0, "name")
		if name == object.Str("tools") {
			return runtime.Return(toolsModule()), true
		}
		return runtime.NotFound(), true
	}
	return h.vfs.handle(c)
}

// addPending records a future.
func (h *host) addPending(id uint32, delay time.Duration, r runtime.FutureResult) {
	r.CallID = id
	h.pending = append(h.pending, pending{callID: id, readyAt: time.Now().Add(delay), result: r})
}

// resolve returns results for some of wanted: all that are due; if none is,
// it waits for the earliest. ok is false when the host holds none of them.
func (h *host) resolve(wanted []uint32) ([]runtime.FutureResult, bool) {
	var earliest time.Time
	found := false
	for _, p := range h.pending {
		if slices.Contains(wanted, p.callID) && (!found || p.readyAt.Before(earliest)) {
			earliest, found = p.readyAt, true
		}
	}
	if !found {
		return nil, false
	}
	if d := time.Until(earliest); d > 0 {
		time.Sleep(d)
	}
	now := time.Now()
	var due []runtime.FutureResult
	rest := h.pending[:0:0]
	for _, p := range h.pending {
		if slices.Contains(wanted, p.callID) && !p.readyAt.After(now) {
			due = append(due, p.result)
		} else {
			rest = append(rest, p)
		}
	}
	h.pending = rest
	return due, true
}

// noHandler is the answer of a host without a handler for c, as
// OsFunctionCall::on_no_handler words it: imports are not found, path
// operations raise PermissionError, the rest RuntimeError.
func noHandler(c *runtime.OSCall) runtime.Answer {
	switch {
	case c.Name == "import":
		return runtime.NotFound()
	case strings.HasPrefix(c.Name, "Path.") || c.Name == "open":
		p := ""
		if len(c.Args) > 0 {
			p = pathString(c.Args[0])
		}
		return runtime.Raise("PermissionError", "Permission denied: "+object.Repr(object.Str(p)))
	}
	return runtime.Raise("RuntimeError", fmt.Sprintf("'%s' is not supported in this environment", c.Name))
}

func pathString(v object.Value) string {
	switch p := v.(type) {
	case object.Path:
		return string(p)
	case object.Str:
		return string(p)
	}
	return ""
}

func list123() object.List { return object.List{object.Int(1), object.Int(2), object.Int(3)} }

func pointFields(x, y int64) []object.Pair {
	return []object.Pair{{Key: object.Str("x"), Value: object.Int(x)}, {Key: object.Str("y"), Value: object.Int(y)}}
}

func toolsModule() object.Module {
	nested := object.Module{Name: "tools.nested", ID: uuidOf(toolsNestedID), Attrs: []object.Pair{
		{Key: object.Str("VERSION"), Value: object.Int(7)},
		{Key: object.Str("return_value"), Value: object.Function{Name: "return_value"}},
	}}
	m := object.Module{Name: "tools", ID: uuidOf(toolsID)}
	for _, f := range toolsFunctions {
		m.Attrs = append(m.Attrs, object.Pair{Key: object.Str(f), Value: object.Function{Name: f}})
	}
	m.Attrs = append(m.Attrs, object.Pair{Key: object.Str("nested"), Value: nested})
	return m
}

// positional checks for exactly n positional arguments and no keywords.
func positional(c *runtime.FunctionCall, n int) ([]object.Value, *excError) {
	if len(c.Kwargs) != 0 || len(c.Args) != n {
		return nil, exc("TypeError", "%s() takes %d positional arguments (%d given)", c.Name, n, len(c.Args))
	}
	return c.Args, nil
}

// raiseFromArgs is the exception raise_error(type, msg) / async_fail(type, msg) raises.
func raiseFromArgs(c *runtime.FunctionCall) *excError {
	args, err := positional(c, 2)
	if err != nil {
		return err
	}
	t, ok1 := args[0].(object.Str)
	m, ok2 := args[1].(object.Str)
	if !ok1 || !ok2 || !knownExcType(string(t)) {
		return exc("TypeError", "%s expects an exception type name and a message", c.Name)
	}
	return &excError{typ: string(t), msg: string(m)}
}

// knownExcType approximates "monty's ExcType parses it": the cases only
// raise builtin exception classes.
func knownExcType(t string) bool {
	return strings.HasSuffix(t, "Error") || strings.HasSuffix(t, "Exception") ||
		t == "StopIteration" || t == "KeyboardInterrupt" || t == "SystemExit" || t == "GeneratorExit"
}
