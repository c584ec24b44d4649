package tools

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// ErrInvalidFunction matches errors from Func and Registry.Register about a
// function or schema that cannot be offered to Python.
var ErrInvalidFunction = errors.New("tools: invalid host function")

// Args are the arguments of one call, bound to parameter names (whether
// Python passed them by position or keyword). An omitted optional parameter
// holds its Default, or is absent when it has none.
type Args map[string]object.Value

// Handler implements a host function over bound arguments. Returning an
// error raises it in Python: a *runtime.Exception (anywhere in the chain)
// raises that exception type, any other error the Function's ErrorType.
type Handler func(ctx context.Context, args Args) (object.Value, error)

// Function is a host function with its schema. Build one with Func from a
// plain Go function, or fill in Handler yourself. A Function is a value;
// once registered it is not modified.
type Function struct {
	Schema
	// Handler runs the call.
	Handler Handler
	// Async makes calls run in their own goroutine and return an awaitable,
	// as calling an async def function does: `await f(...)` waits for one,
	// and asyncio.gather over several runs them concurrently.
	Async bool
	// ErrorType is the Python exception raised for errors the handler
	// returns that are not a *runtime.Exception; empty means RuntimeError.
	// Monty raises unknown type names as RuntimeError.
	ErrorType string
	// noEvents keeps the call out of the run's event stream (the
	// introspection built-ins).
	noEvents bool
	// recv is the receiver type of a Method.
	recv reflect.Type
	// Approval makes the calls of a method (of a Class or of a namespace)
	// wait for a person's approval: the run does not make the call but
	// pauses at it, durably, and the pause lists it as an approval
	// (Registry.Approval finds the call to make once a person approved
	// it). Package mcpclient sets it for the tools that need approval. A
	// plain function cannot take it: Register refuses one that does.
	Approval bool
}

// Help is the text help() shows for the function (Schema.Help), with a
// note on a method whose calls wait for a person's approval.
func (f Function) Help() string {
	h := f.Schema.Help()
	if f.Approval {
		h += "\n\n    Each call waits for a person's approval: the run pauses until it is given, or refused (the call then raises PermissionError)."
	}
	return h
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var ctxType = reflect.TypeFor[context.Context]()
var errType = reflect.TypeFor[error]()

// Func adapts a plain Go function to a host function described by s.
//
// fn's parameters, after an optional leading context.Context, correspond
// one to one to s.Params, in order. Python arguments are converted to the
// Go parameter types with object.Into (str to string, int to the integer
// kinds with range checks, list to slices, dict to maps and structs by json
// tag, datetime to time.Time, ...); an argument that does not fit raises
// TypeError naming the parameter. A Param without a Type gets one from its
// Go type. fn returns nothing, a value, an error, or a value and an error;
// the value is converted with object.FromGo.
//
// An empty s.ReturnType is inferred from the Go result: Null when fn returns
// no value, otherwise the type object.FromGo produces for the result type
// (Any when that depends on the value, as for pointers and interfaces).
//
// Func fails with ErrInvalidFunction when fn is not such a function, when
// the parameter counts differ, or when a declared Type, Default or
// ReturnType does not fit the Go parameter or result.
func Func(s Schema, fn any) (Function, error) {
	v := reflect.ValueOf(fn)
	t := v.Type()
	if v.Kind() != reflect.Func || v.IsNil() {
		return Function{}, fmt.Errorf("%w: %s: want a func, got %T", ErrInvalidFunction, s.Name, fn)
	}
	if t.IsVariadic() {
		return Function{}, fmt.Errorf("%w: %s: variadic functions are not supported; take a slice", ErrInvalidFunction, s.Name)
	}
	first := 0
	if t.NumIn() > 0 && t.In(0) == ctxType {
		first = 1
	}
	if n := t.NumIn() - first; n != len(s.Params) {
		return Function{}, fmt.Errorf("%w: %s: the Go function takes %d arguments (besides a context) but the schema declares %d parameters", ErrInvalidFunction, s.Name, n, len(s.Params))
	}
	switch {
	case t.NumOut() > 2,
		t.NumOut() == 2 && t.Out(1) != errType:
		return Function{}, fmt.Errorf("%w: %s: results must be (), (T), (error) or (T, error)", ErrInvalidFunction, s.Name)
	}
	retType := Null
	if n := t.NumOut(); n == 2 || n == 1 && t.Out(0) != errType {
		retType = returnTypeOf(t.Out(0))
	}
	switch {
	case s.ReturnType == Any:
		s.ReturnType = retType
	case retType != Any && s.ReturnType != retType && !(s.ReturnType == Number && retType == Integer):
		return Function{}, fmt.Errorf("%w: %s: the return type is declared %q but the Go function returns %s", ErrInvalidFunction, s.Name, s.ReturnType, goResult(t))
	}
	s.Params = append([]Param(nil), s.Params...)
	goTypes := make([]reflect.Type, len(s.Params))
	for i := range s.Params {
		p := &s.Params[i]
		gt := t.In(first + i)
		goTypes[i] = gt
		inferred := typeOf(gt)
		switch {
		case p.Type == Any:
			p.Type = inferred
		case inferred != Any && p.Type != inferred && !(p.Type == Number && inferred == Integer):
			return Function{}, fmt.Errorf("%w: %s: parameter %q is declared %q but the Go parameter is %s", ErrInvalidFunction, s.Name, p.Name, p.Type, gt)
		}
		if p.Default != nil {
			dv, err := object.FromGo(p.Default)
			if err == nil {
				err = object.Into(dv, reflect.New(gt).Interface())
			}
			if err != nil {
				return Function{}, fmt.Errorf("%w: %s: default of parameter %q does not fit %s: %v", ErrInvalidFunction, s.Name, p.Name, gt, err)
			}
		}
	}
	name := s.Name
	h := func(ctx context.Context, args Args) (object.Value, error) {
		in := make([]reflect.Value, 0, t.NumIn())
		if first == 1 {
			in = append(in, reflect.ValueOf(ctx))
		}
		for i, p := range s.Params {
			ptr := reflect.New(goTypes[i])
			if a, ok := args[p.Name]; ok {
				if err := object.IntoStrict(a, ptr.Interface()); err != nil {
					return nil, argTypeError(name, p.Name, err)
				}
			}
			in = append(in, ptr.Elem())
		}
		out := v.Call(in)
		if len(out) > 0 && out[len(out)-1].Type() == errType {
			if err, _ := out[len(out)-1].Interface().(error); err != nil {
				return nil, err
			}
			out = out[:len(out)-1]
		}
		if len(out) == 0 {
			return object.None{}, nil
		}
		r, err := object.FromGo(out[0].Interface())
		if err != nil {
			return nil, &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf("%s() returned a value Python cannot hold: %v", name, err)}
		}
		return r, nil
	}
	return Function{Schema: s, Handler: h}, nil
}

// MustFunc is Func that panics on error, for functions fixed at compile
// time (package-level variables, examples).
func MustFunc(s Schema, fn any) Function {
	f, err := Func(s, fn)
	if err != nil {
		panic(err)
	}
	return f
}

// typeOf infers the parameter type of a Go type.
func typeOf(t reflect.Type) ParamType {
	switch t {
	case reflect.TypeFor[time.Time](), reflect.TypeFor[time.Duration]():
		return Any
	}
	switch t.Kind() {
	case reflect.String:
		return String
	case reflect.Bool:
		return Boolean
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return Integer
	case reflect.Float32, reflect.Float64:
		return Number
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return Any // bytes
		}
		return Array
	case reflect.Map, reflect.Struct:
		return Object
	}
	return Any
}

// returnTypeOf infers the return type of a Go result type: the type of the
// Python value object.FromGo makes of it, or Any when that depends on the
// value or has no JSON-schema type.
func returnTypeOf(t reflect.Type) ParamType {
	switch {
	case t == reflect.TypeFor[big.Int]():
		return Integer
	case t == reflect.TypeFor[json.Number]():
		return Number // an int or a float
	case t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer && t.Implements(valueType):
		// An object.Value is kept as is.
		switch reflect.Zero(t).Interface().(object.Value).Kind() {
		case object.KindNone:
			return Null
		case object.KindBool:
			return Boolean
		case object.KindInt, object.KindBigInt:
			return Integer
		case object.KindFloat:
			return Number
		case object.KindStr:
			return String
		case object.KindList:
			return Array
		case object.KindDict:
			return Object
		}
		return Any
	case t.Kind() == reflect.Map && t.Key().Kind() != reflect.String && !t.Key().Implements(textMarshaler):
		return Any // a dict, but its keys need not be str
	}
	return typeOf(t)
}

var (
	valueType     = reflect.TypeFor[object.Value]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// goResult names a Go function's results for error messages.
func goResult(t reflect.Type) string {
	switch {
	case t.NumOut() == 0:
		return "nothing"
	case t.NumOut() == 1 && t.Out(0) == errType:
		return "only an error"
	}
	return t.Out(0).String()
}

func argTypeError(fn, param string, err error) error {
	var ce *object.ConversionError
	if errors.As(err, &ce) && ce.Path == "" {
		if ce.Detail != "" {
			return &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf("%s() argument '%s': %s", fn, param, ce.Detail)}
		}
		return &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf("%s() argument '%s' must be %s, not %s", fn, param, pyTypeName(ce.Want), ce.Got)}
	}
	return &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf("%s() argument '%s': %v", fn, param, err)}
}

// pyTypeName names a Go type the way Python would call what converts to it.
func pyTypeName(goType string) string {
	switch {
	case goType == "string":
		return "str"
	case goType == "bool":
		return "bool"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "int"
	case strings.HasPrefix(goType, "float"):
		return "float"
	case strings.HasPrefix(goType, "[]"):
		return "list"
	case strings.HasPrefix(goType, "map["):
		return "dict"
	}
	return goType
}

// validate checks a function before registration.
func (f *Function) validate() error {
	if !identifier.MatchString(f.Name) {
		return fmt.Errorf("%w: name %q is not a Python identifier", ErrInvalidFunction, f.Name)
	}
	if f.Handler == nil {
		return fmt.Errorf("%w: %s has no Handler (use Func to adapt a Go function)", ErrInvalidFunction, f.Name)
	}
	if !f.ReturnType.validReturn() {
		return fmt.Errorf("%w: %s: unknown return type %q", ErrInvalidFunction, f.Name, f.ReturnType)
	}
	seen := map[string]bool{}
	for _, p := range f.Params {
		if !identifier.MatchString(p.Name) {
			return fmt.Errorf("%w: %s: parameter name %q is not a Python identifier", ErrInvalidFunction, f.Name, p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("%w: %s: parameter %q declared twice", ErrInvalidFunction, f.Name, p.Name)
		}
		seen[p.Name] = true
		if !p.Type.valid() {
			return fmt.Errorf("%w: %s: parameter %q has unknown type %q", ErrInvalidFunction, f.Name, p.Name, p.Type)
		}
		if p.Default != nil {
			dv, err := object.FromGo(p.Default)
			if err != nil {
				return fmt.Errorf("%w: %s: default of parameter %q: %v", ErrInvalidFunction, f.Name, p.Name, err)
			}
			if !p.Type.accepts(dv) {
				return fmt.Errorf("%w: %s: default of parameter %q is %s, not %s", ErrInvalidFunction, f.Name, p.Name, dv.Kind(), p.Type)
			}
		}
	}
	return nil
}

// bind matches a call's positional and keyword arguments to the
// parameters, checks their types and fills in defaults. Errors are
// TypeErrors worded as CPython words them.
func (f *Function) bind(args []object.Value, kwargs []object.Pair) (Args, error) {
	if len(args) > len(f.Params) {
		return nil, typeErrorf("%s() takes %d positional arguments but %d were given", f.Name, len(f.Params), len(args))
	}
	bound := make(Args, len(f.Params))
	for i, a := range args {
		bound[f.Params[i].Name] = a
	}
	for _, kw := range kwargs {
		k, _ := kw.Key.(object.Str)
		p := f.param(string(k))
		if p == nil {
			return nil, typeErrorf("%s() got an unexpected keyword argument '%s'", f.Name, k)
		}
		if _, dup := bound[p.Name]; dup {
			return nil, typeErrorf("%s() got multiple values for argument '%s'", f.Name, k)
		}
		bound[p.Name] = kw.Value
	}
	var missing []string
	for _, p := range f.Params {
		v, ok := bound[p.Name]
		if ok && v.Kind() == object.KindNone && !p.Required() {
			delete(bound, p.Name)
			ok = false
		}
		if !ok {
			switch {
			case p.Required():
				missing = append(missing, "'"+p.Name+"'")
			case p.Default != nil:
				bound[p.Name], _ = object.FromGo(p.Default) // checked by validate
			}
			continue
		}
		if !p.Type.accepts(v) {
			return nil, typeErrorf("%s() argument '%s' must be %s, not %s", f.Name, p.Name, p.Type.pyName(), v.Kind())
		}
	}
	if len(missing) > 0 {
		return nil, typeErrorf("%s() missing %d required argument(s): %s", f.Name, len(missing), strings.Join(missing, ", "))
	}
	return bound, nil
}

func (f *Function) param(name string) *Param {
	for i := range f.Params {
		if f.Params[i].Name == name {
			return &f.Params[i]
		}
	}
	return nil
}

func typeErrorf(format string, a ...any) error {
	return &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf(format, a...)}
}

// call runs the handler, turning panics and plain errors into the Python
// exception the function raises.
func (f *Function) call(ctx context.Context, args Args) (v object.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf("host function %s panicked: %v", f.Name, r)}
		}
	}()
	v, err = f.Handler(ctx, args)
	if err == nil {
		if v == nil {
			v = object.None{}
		}
		return v, nil
	}
	var exc *runtime.Exception
	switch {
	case errors.As(err, &exc):
		return nil, exc
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Kept as is so the runtime can tell a spent MaxCallTime.
		return nil, err
	}
	typ := f.ErrorType
	if typ == "" {
		typ = "RuntimeError"
	}
	return nil, &runtime.Exception{Type: typ, Message: err.Error()}
}
