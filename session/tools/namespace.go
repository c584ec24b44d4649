package tools

import (
	"fmt"
	"strings"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// A namespace is a global object whose methods are a service's
// operations: package mcpclient offers each MCP server as one, its tools
// as the methods. The registry keeps the namespace's class (replaced when
// the service's operations change) and one object of it, whose identity
// derives from the name so that a session saved in one process finds it
// again in another.

// Taken reports whether name is already used by a function, class,
// global or namespace of the registry, or is one of the built-ins
// (list_functions, help).
func (r *Registry) Taken(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.taken(name)
}

// AddNamespace offers value to Python as the global name, an object of
// class c whose methods are the namespace's operations (c.Type is not
// used: the object is value itself). name must be a Python identifier
// that does not start with "_". It fails with an error matching
// ErrInvalidFunction when the name is not one, a method is malformed or
// the name is taken.
func (r *Registry) AddNamespace(name string, c *Class, value any) error {
	if !IsIdentifier(name) || strings.HasPrefix(name, "_") {
		return fmt.Errorf("%w: namespace name %q is not a Python identifier that does not start with _", ErrInvalidFunction, name)
	}
	if err := c.validateMethods(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.taken(name) {
		return fmt.Errorf("%w: the name %s is already taken", ErrInvalidFunction, name)
	}
	p := c.prepared()
	id := namespaceID(name)
	r.namespaces[name] = nsEntry{class: p, id: id}
	r.objects[id] = hostObject{class: p, value: value}
	return nil
}

// ReplaceNamespace gives the namespace name the class c (its operations
// changed); calls made from then on see the new methods. It fails with an
// error matching ErrInvalidFunction when a method is malformed or there is
// no such namespace.
func (r *Registry) ReplaceNamespace(name string, c *Class, value any) error {
	if err := c.validateMethods(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.namespaces[name]
	if !ok {
		return fmt.Errorf("%w: no namespace %s", ErrInvalidFunction, name)
	}
	e.class = c.prepared()
	r.namespaces[name] = e
	r.objects[e.id] = hostObject{class: e.class, value: value}
	return nil
}

// namespaceID is the identity of namespace name's object.
func namespaceID(name string) object.UUID {
	return object.NameUUID("monty-go MCP namespace", name)
}

// Approval finds the method named method of host object id when its calls
// wait for a person's approval (Function.Approval): it returns the call as
// the code made it ("github.delete_repo"), and the host function that
// makes the call, binding the arguments and reporting to the run's
// Observer as a call the code made itself. ok is false when id is not an
// object of this registry or its method does not wait for approval.
func (r *Registry) Approval(id object.UUID, method string) (name string, call runtime.HostFunc, ok bool) {
	if r == nil {
		return "", nil, false
	}
	o, found := r.lookupObject(id)
	if !found {
		return "", nil, false
	}
	m := o.class.method(method)
	if m == nil || !m.Approval {
		return "", nil, false
	}
	return o.class.Name + "." + method, o.class.calls[method], true
}

// Catalog is what a registry offers Python, in the order a description
// lists it. Its values are shared with the registry: read them, do not
// modify them.
type Catalog struct {
	// Functions are the registered functions, by category, then name.
	Functions []Function
	// Classes are the registered classes, by name.
	Classes []*Class
	// Namespaces are the namespaces' classes (their methods are the
	// operations), by name.
	Namespaces []*Class
	// Globals are the predefined names (SetGlobal), by name, Str-keyed.
	Globals []object.Pair
}

// Catalog lists what the registry offers Python now.
func (r *Registry) Catalog() Catalog {
	return Catalog{Functions: r.sorted(), Classes: r.sortedClasses(), Namespaces: r.namespaceClasses(), Globals: r.hostGlobals()}
}

// Stub is the attribute as a line of a class stub: "name: type", with
// "| None" when it is optional.
func (a Attribute) Stub() string {
	t := stubNames{}.result(a.Type)
	if a.Optional && t != "Any" {
		t += " | None"
	}
	return a.Name + ": " + t
}
