package tools

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// hostObject is a Go value the code holds as a host object.
type hostObject struct {
	class *Class
	value any
}

// RegisterClass adds host classes. Python code can then use the class by
// name (isinstance(x, Account), help(Account)) and receive its objects
// (Object). It fails, adding none, with an error matching
// ErrInvalidFunction when a class is malformed or its name or Go type is
// taken.
func (r *Registry) RegisterClass(classes ...*Class) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	names, types := map[string]bool{}, map[reflect.Type]bool{}
	for _, c := range classes {
		if err := c.validate(); err != nil {
			return err
		}
		if r.taken(c.Name) || names[c.Name] {
			return fmt.Errorf("%w: the name %s is already taken", ErrInvalidFunction, c.Name)
		}
		if r.byType[c.Type] != nil || types[c.Type] {
			return fmt.Errorf("%w: class %s: the Go type %s already has a class", ErrInvalidFunction, c.Name, c.Type)
		}
		names[c.Name], types[c.Type] = true, true
	}
	for _, c := range classes {
		c := c.prepared()
		r.classes[c.Name], r.byType[c.Type], r.byID[c.id()] = c, c, c
	}
	return nil
}

// prepared is a copy of c as the registry keeps it, with its methods'
// host functions.
func (c *Class) prepared() *Class {
	p := *c
	p.Attributes, p.Methods = slices.Clone(c.Attributes), slices.Clone(c.Methods)
	p.calls = make(map[string]runtime.HostFunc, len(p.Methods))
	for _, m := range p.Methods {
		m.Name = p.Name + "." + m.Name // as errors and events name it
		p.calls[m.Name[len(p.Name)+1:]] = hostFunc(&m)
	}
	return &p
}

// Object returns the host object Python sees for v, whose Go type must be
// a registered class's Type (else the error matches ErrUnknownClass). Pass
// it to the code as an input (Session.ExecWith, runtime.Input) or return it
// from a host function or method. The registry holds v until Release: a
// host that makes objects per call (a function returning a new one each
// time) must Release them, or use ObjectKey, whose identities are reused.
//
// Each call gives v a new random identity, valid in this registry only: a
// session saved with the object and restored in another process (or after
// Release) still holds the reference, but using it raises RuntimeError
// saying that the host object is not available. Use ObjectKey for objects
// that must work again after such a move.
func (r *Registry) Object(v any) (object.Instance, error) {
	u := object.NewUUID()
	return r.object(v, func(c *Class) object.UUID {
		// A name-derived (version 8) UUID, like ObjectKey's: what tells
		// the registry's objects from other host-defined instances.
		return object.NameUUID("monty-go host object", c.Name, "\x00random", string(u[:]))
	})
}

// ObjectKey is Object with an identity derived from the class and key, the
// same in every process: registering the value for the same key again (in
// this registry or one in another process) makes references to it that a
// restored session holds work again, now reaching this value. Keys are one
// namespace per class and registry: a registry shared by several users or
// tenants must put theirs in the key (such as "tenant-7/acct-42"), or one
// user's key would reach another's object.
func (r *Registry) ObjectKey(v any, key string) (object.Instance, error) {
	return r.object(v, func(c *Class) object.UUID { return object.NameUUID("monty-go host object", c.Name, key) })
}

func (r *Registry) object(v any, identity func(*Class) object.UUID) (object.Instance, error) {
	c := r.classOf(v)
	if c == nil {
		return object.Instance{}, unknownClass(v)
	}
	id := identity(c)
	r.mu.Lock()
	r.objects[id] = hostObject{class: c, value: v}
	r.mu.Unlock()
	return object.Instance{Class: c.classType(), ID: id}, nil
}

func unknownClass(v any) error {
	return fmt.Errorf("%w: %T (register one with RegisterClass)", ErrUnknownClass, v)
}

func (r *Registry) classOf(v any) *Class {
	if v == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byType[reflect.TypeOf(v)]
}

// Release forgets the object with the given identity (Instance.ID): the
// registry no longer holds its Go value, and code still holding it gets
// RuntimeError when it uses it.
func (r *Registry) Release(id object.UUID) {
	r.mu.Lock()
	delete(r.objects, id)
	r.mu.Unlock()
}

// lookupObject returns the object with identity id.
func (r *Registry) lookupObject(id object.UUID) (hostObject, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	o, ok := r.objects[id]
	return o, ok
}

// SetGlobal offers v to the code under name, as if the code had defined
// it: typically a host object (Object, ObjectKey), so that code run by an
// agent.Executor, which takes no inputs, can use it. Hosts made before the call
// do not offer it. It fails with ErrInvalidFunction when name is not an
// identifier or is a function's or class's name. Code that assigns the
// name replaces it for itself.
func (r *Registry) SetGlobal(name string, v object.Value) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, global := r.globals[name]
	switch {
	case !IsIdentifier(name):
		return fmt.Errorf("%w: global name %q is not a Python identifier", ErrInvalidFunction, name)
	case r.taken(name) && !global:
		return fmt.Errorf("%w: the name %s is already taken", ErrInvalidFunction, name)
	case v == nil:
		return fmt.Errorf("%w: global %s: nil value", ErrInvalidFunction, name)
	}
	r.globals[name] = v
	return nil
}

// hostValues are the registered classes and globals by name, as
// Host.Values.
func (r *Registry) hostValues() map[string]object.Value {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]object.Value, len(r.classes)+len(r.globals))
	for name, c := range r.classes {
		out[name] = c.classType()
	}
	for name, v := range r.globals {
		out[name] = v
	}
	for name, e := range r.namespaces {
		out[name] = e.object()
	}
	return out
}

// nsEntry is a namespace as the registry keeps it: its class (replaced
// when the server's tools change) and its object's identity.
type nsEntry struct {
	class *Class
	id    object.UUID
}

// object is the namespace's object, as Python holds it.
func (e nsEntry) object() object.Instance {
	return object.Instance{Class: e.class.classType(), ID: e.id}
}

// namespaceClasses returns the namespaces' classes by name.
func (r *Registry) namespaceClasses() []*Class {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Class, 0, len(r.namespaces))
	for _, e := range r.namespaces {
		out = append(out, e.class)
	}
	slices.SortFunc(out, func(a, b *Class) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// sortedClasses returns the classes by name.
func (r *Registry) sortedClasses() []*Class {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Class, 0, len(r.classes))
	for _, c := range r.classes {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Class) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// objectHandler serves the registry's host objects to a runtime.Host.
type objectHandler struct{ r *Registry }

func notAvailable(id object.UUID) error {
	return &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf(
		"host object %s is not available: it was released, or given to the code in another process; the host must offer it again", id)}
}

// registryID reports whether id has the form of the registry's object
// identities (version 8, name-derived); other host-defined instances, such
// as object.Dataclass values (version 4), are data the registry does not
// serve.
func registryID(id object.UUID) bool { return id[6]>>4 == 8 }

// Attr implements runtime.ObjectHandler.
func (h objectHandler) Attr(ctx context.Context, id object.UUID, name string) (object.Value, error) {
	o, ok := h.r.lookupObject(id)
	if !ok {
		if h.r.isClass(id) || !registryID(id) {
			return nil, runtime.ErrNotHandled // AttributeError
		}
		return nil, notAvailable(id)
	}
	if a := o.class.attribute(name); a != nil {
		v, err := safeGet(ctx, a, o)
		if err != nil {
			return nil, err
		}
		return orNone(v), nil
	}
	if o.class.method(name) != nil {
		return nil, &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf(
			"%s.%s is a host method: call it directly, as obj.%s(...)", o.class.Name, name, name)}
	}
	return nil, runtime.ErrNotHandled
}

// safeGet reads an attribute, turning a panic or a value Python cannot hold
// into an exception.
func safeGet(ctx context.Context, a *Attribute, o hostObject) (v object.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf("reading %s.%s panicked: %v", o.class.Name, a.Name, p)}
		}
	}()
	v, err = a.Get(ctx, o.value)
	var gve *object.GoValueError
	if errors.As(err, &gve) {
		return nil, &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf("%s.%s holds a value Python cannot hold: %v", o.class.Name, a.Name, err)}
	}
	return v, err
}

func (r *Registry) isClass(id object.UUID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byID[id] != nil
}

// Method implements runtime.ObjectHandler.
func (h objectHandler) Method(_ context.Context, id object.UUID, name string) (runtime.Function, error) {
	o, ok := h.r.lookupObject(id)
	if !ok {
		h.r.mu.RLock()
		c := h.r.byID[id]
		h.r.mu.RUnlock()
		switch {
		case c != nil && name == "__call__":
			return runtime.Function{}, &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf(
				"%s objects are made by the host; they cannot be created in Python", c.Name)}
		case c != nil:
			return runtime.Function{}, &runtime.Exception{Type: "AttributeError", Message: fmt.Sprintf(
				"type object '%s' has no attribute '%s'", c.Name, name)}
		case !registryID(id):
			return runtime.Function{}, &runtime.Exception{Type: "AttributeError", Message: fmt.Sprintf(
				"object has no attribute '%s' (it is data, not a host object with methods)", name)}
		}
		return runtime.Function{}, notAvailable(id)
	}
	m := o.class.method(name)
	if m == nil {
		return runtime.Function{}, &runtime.Exception{Type: "AttributeError", Message: fmt.Sprintf(
			"'%s' object has no attribute '%s'", o.class.Name, name)}
	}
	if m.Approval {
		// The run pauses at the call until a person decides
		// (Registry.Approval).
		return runtime.Function{External: true, Async: m.Async}, nil
	}
	call := o.class.calls[name]
	return runtime.Function{
		Func: func(ctx context.Context, args []object.Value, kwargs []object.Pair) (object.Value, error) {
			return call(context.WithValue(ctx, receiverKey{}, o.value), args, kwargs)
		},
		Async: m.Async,
	}, nil
}

func orNone(v object.Value) object.Value {
	if v == nil {
		return object.None{}
	}
	return v
}

// hostGlobals returns the globals sorted by name, as Str-keyed pairs.
func (r *Registry) hostGlobals() []object.Pair {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]object.Pair, 0, len(r.globals))
	for name, v := range r.globals {
		out = append(out, object.Pair{Key: object.Str(name), Value: v})
	}
	slices.SortFunc(out, func(a, b object.Pair) int {
		return strings.Compare(string(a.Key.(object.Str)), string(b.Key.(object.Str)))
	})
	return out
}
