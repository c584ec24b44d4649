package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/monty-go/monty/object"
)

// ObjectHandler answers what Python does with host objects: instances the
// host gave the code as an object.Instance whose Class.HostDefined is true.
// The interpreter keeps such an instance's identity (Instance.ID) and the
// attributes sent with it (Instance.Attrs, read locally); reading any other
// public attribute and calling any method come back to the host, keyed by
// that identity. Reading a name that starts with "_" never does (it raises
// AttributeError in the sandbox), and attribute assignments change only the
// sandbox's copy.
//
// Calling a host class (a HostDefined object.ClassType the host offered)
// comes back as the method "__call__" of the class's ID.
//
// Implementations must be safe for concurrent use: one handler serves every
// run of its Host.
type ObjectHandler interface {
	// Attr returns the attribute name of the object id. ErrNotHandled
	// raises AttributeError; an *Exception raises that exception; other
	// errors raise RuntimeError.
	Attr(ctx context.Context, id object.UUID, name string) (object.Value, error)
	// Method returns the method name of the object (or class) id, to be
	// called with the call's arguments. An error is raised in Python
	// instead of calling anything (an *Exception as that exception, for
	// example AttributeError for a name the object does not have). It is
	// a lookup and must not block: the run's limits bound the returned
	// Function's call, not Method itself. A Function with External set
	// is answered by the run's caller, like an External function's call
	// (Drive returns *Suspended; FunctionCall.ObjectID names the object).
	Method(ctx context.Context, id object.UUID, name string) (Function, error)
}

// objectAttr answers an attribute read on a host object.
func (d *drive) objectAttr(p *NameLookup) (Answer, error) {
	if d.h.Objects == nil {
		return NotFound(), nil
	}
	if err := d.count(); err != nil {
		return abortFor(err), err
	}
	id := *p.ObjectID
	v, err, stop := d.invoke(func(ctx context.Context) (object.Value, error) {
		return d.h.Objects.Attr(ctx, id, p.Name)
	})
	switch {
	case stop != nil:
		return abortFor(stop), stop
	case errors.Is(err, ErrNotHandled):
		return NotFound(), nil // the interpreter raises AttributeError
	case err != nil:
		return raiseFor(err), nil
	}
	return Return(orNone(v)), nil
}

// objectMethod answers a method call on a host object (or a host class).
func (d *drive) objectMethod(p *FunctionCall) (Answer, error) {
	if d.h.Objects == nil {
		return Raise("AttributeError", "this host offers no methods on host objects ('"+p.Name+"')"), nil
	}
	f, err := lookupMethod(d.ctx, d.h.Objects, *p.ObjectID, p.Name)
	if err != nil {
		return raiseFor(err), nil
	}
	if f.External {
		// Answered by the caller, as an External function's call.
		return d.externalCall(f, p)
	}
	return d.callFunction(f, p)
}

// callValue answers a call of a name the code never defined that Host.Values
// offers: calling a host class constructs through its "__call__" method.
func (d *drive) callValue(p *FunctionCall) (Answer, error) {
	c, ok := d.h.Values[p.Name].(object.ClassType)
	if !ok || !c.HostDefined {
		return NotFound(), nil
	}
	call := *p
	call.Name, call.ObjectID = "__call__", &c.ID
	return d.objectMethod(&call)
}

// lookupMethod asks the handler for a method, turning a panic into an
// error: what the code calls must not crash the host.
func lookupMethod(ctx context.Context, h ObjectHandler, id object.UUID, name string) (f Function, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = Function{}, fmt.Errorf("host object method lookup panicked: %v", p)
		}
	}()
	return h.Method(ctx, id, name)
}
