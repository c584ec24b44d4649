package tools

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// Class is a Go type offered to Python as a host class. Python receives
// its values as host objects (Registry.Object): reading an attribute calls
// the attribute's Get, calling a method calls the method's Handler, each
// time (so the code always sees the Go value's current state), and help(obj)
// describes the class. Build one from a struct type with NewClass, or fill
// it in yourself (an explicit descriptor). A Class is not modified once
// registered; it is safe for concurrent use if its functions are.
type Class struct {
	// Name is the Python class name (an identifier).
	Name string
	// Description is the class docstring, shown by help().
	Description string
	// Type is the Go type of the class's objects (for example *Account):
	// Registry.Object finds the class of a value by it, and Receiver
	// returns values of it.
	Type reflect.Type
	// Attributes are the readable attributes.
	Attributes []Attribute
	// Methods are the callable methods (their Schema.Name is the method
	// name); a Handler finds the object it is called on with Receiver.
	// Async methods are awaited like async host functions.
	Methods []Function

	calls map[string]runtime.HostFunc // the methods, by name, once registered
}

// Attribute is a readable attribute of a host class.
type Attribute struct {
	// Name is the attribute name: a public Python identifier.
	Name string
	// Type is what Get returns, for help() and the stubs (Any: anything).
	Type ParamType
	// Optional says the value may be None.
	Optional bool
	// Description is shown by help().
	Description string
	// Get reads the attribute of obj (a value of the class's Type).
	Get func(ctx context.Context, obj any) (object.Value, error)
}

type receiverKey struct{}

// Receiver returns the object a method was called on, inside the method's
// Handler; nil elsewhere.
func Receiver(ctx context.Context) any { return ctx.Value(receiverKey{}) }

// NewClass describes the Go type of sample (a struct, or a pointer to one,
// such as (*Account)(nil)) as the host class name: every exported field,
// named as object.Dataclass names it (json tags), becomes an attribute read
// from the object when the code reads it (a field whose name Python could
// not use, such as json:"first-name" or one starting with "_", is left
// out); methods are the class's methods, usually made with Method. It
// fails with ErrInvalidFunction when name or a method is not valid, or a
// method's receiver is another type.
//
// The attributes read the fields without locking. When methods (async
// ones run concurrently) or the host change the fields while code runs,
// give the class Attributes whose Get takes the type's lock instead.
func NewClass(name, description string, sample any, methods ...Function) (*Class, error) {
	t := reflect.TypeOf(sample)
	if t == nil {
		return nil, fmt.Errorf("%w: class %s: sample is nil; pass a typed value such as (*T)(nil)", ErrInvalidFunction, name)
	}
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	c := &Class{Name: name, Description: description, Type: t, Methods: methods}
	if st.Kind() == reflect.Struct {
		for i := range st.NumField() {
			sf := st.Field(i)
			fname, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if !sf.IsExported() || sf.Anonymous || fname == "-" {
				continue
			}
			if fname == "" {
				fname = sf.Name
			}
			if !IsIdentifier(fname) || strings.HasPrefix(fname, "_") {
				continue // Python could not read it (e.g. json:"first-name")
			}
			ft, optional := sf.Type, false
			if ft.Kind() == reflect.Pointer {
				ft, optional = ft.Elem(), true
			}
			index := sf.Index
			c.Attributes = append(c.Attributes, Attribute{
				Name: fname, Type: returnTypeOf(ft), Optional: optional,
				Get: func(_ context.Context, obj any) (object.Value, error) {
					rv := reflect.ValueOf(obj)
					for rv.Kind() == reflect.Pointer {
						if rv.IsNil() {
							return object.None{}, nil
						}
						rv = rv.Elem()
					}
					return object.FromGo(rv.FieldByIndex(index).Interface())
				},
			})
		}
	}
	return c, c.validate()
}

// Method adapts a Go method expression, such as (*Account).Deposit, to a
// method described by s: fn's first parameter is the receiver, then come an
// optional context.Context and one parameter per s.Params, as for Func.
func Method(s Schema, fn any) (Function, error) {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() || v.Type().NumIn() == 0 {
		return Function{}, fmt.Errorf("%w: method %s: want a method expression such as (*T).Method, got %T", ErrInvalidFunction, s.Name, fn)
	}
	t := v.Type()
	recv := t.In(0)
	takesCtx := t.NumIn() > 1 && t.In(1) == ctxType
	// The same function without its receiver and always with a context,
	// for Func's checks and conversions; it finds the receiver in the
	// context the handler below puts it in.
	in := []reflect.Type{ctxType}
	first := 1
	if takesCtx {
		first = 2
	}
	for i := first; i < t.NumIn(); i++ {
		in = append(in, t.In(i))
	}
	out := make([]reflect.Type, t.NumOut())
	for i := range out {
		out[i] = t.Out(i)
	}
	bare := reflect.MakeFunc(reflect.FuncOf(in, out, t.IsVariadic()), func(args []reflect.Value) []reflect.Value {
		obj := args[0].Interface().(context.Context).Value(boundKey{}).(reflect.Value)
		call := append([]reflect.Value{obj}, args[1:]...)
		if takesCtx {
			call = append([]reflect.Value{obj}, args...)
		}
		return v.Call(call)
	})
	f, err := Func(s, bare.Interface())
	if err != nil {
		return Function{}, err
	}
	call := f.Handler
	f.Handler = func(ctx context.Context, a Args) (object.Value, error) {
		obj := reflect.ValueOf(Receiver(ctx))
		if !obj.IsValid() || !obj.Type().AssignableTo(recv) {
			return nil, &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf("%s() needs a %s object", s.Name, recv)}
		}
		return call(context.WithValue(ctx, boundKey{}, obj), a)
	}
	f.recv = recv
	return f, nil
}

// boundKey carries the receiver to Func's call of a method.
type boundKey struct{}

// MustMethod is Method that panics on error.
func MustMethod(s Schema, fn any) Function {
	f, err := Method(s, fn)
	if err != nil {
		panic(err)
	}
	return f
}

// validate checks a class before registration.
func (c *Class) validate() error {
	if !IsIdentifier(c.Name) {
		return fmt.Errorf("%w: class name %q is not a Python identifier", ErrInvalidFunction, c.Name)
	}
	if c.Type == nil {
		return fmt.Errorf("%w: class %s has no Type", ErrInvalidFunction, c.Name)
	}
	return c.validateMethods()
}

// validateMethods checks a class's attributes and methods.
func (c *Class) validateMethods() error {
	seen := map[string]bool{}
	for _, a := range c.Attributes {
		if !IsIdentifier(a.Name) || strings.HasPrefix(a.Name, "_") {
			return fmt.Errorf("%w: class %s: attribute name %q is not a public Python identifier", ErrInvalidFunction, c.Name, a.Name)
		}
		if a.Get == nil {
			return fmt.Errorf("%w: class %s: attribute %s has no Get", ErrInvalidFunction, c.Name, a.Name)
		}
		if seen[a.Name] {
			return fmt.Errorf("%w: class %s: %s declared twice", ErrInvalidFunction, c.Name, a.Name)
		}
		seen[a.Name] = true
	}
	for i := range c.Methods {
		m := &c.Methods[i]
		if err := m.validate(); err != nil {
			return fmt.Errorf("class %s: %w", c.Name, err)
		}
		if m.param("self") != nil {
			return fmt.Errorf("%w: class %s: method %s: a parameter cannot be called self", ErrInvalidFunction, c.Name, m.Name)
		}
		if strings.HasPrefix(m.Name, "_") {
			return fmt.Errorf("%w: class %s: method %s: names starting with _ never reach the host", ErrInvalidFunction, c.Name, m.Name)
		}
		if seen[m.Name] {
			return fmt.Errorf("%w: class %s: %s declared twice", ErrInvalidFunction, c.Name, m.Name)
		}
		seen[m.Name] = true
		if m.recv != nil && (c.Type == nil || !c.Type.AssignableTo(m.recv)) {
			return fmt.Errorf("%w: class %s: method %s takes a %s receiver, not %s", ErrInvalidFunction, c.Name, m.Name, m.recv, c.Type)
		}
	}
	return nil
}

// id is the class's identity in Python: derived from its name, so a
// session restored in another process finds the same class.
func (c *Class) id() object.UUID { return object.NameUUID("monty-go host class", c.Name) }

// classType is the class object Python sees.
func (c *Class) classType() object.ClassType {
	return object.ClassType{Name: c.Name, ID: c.id(), HostDefined: true}
}

func (c *Class) method(name string) *Function {
	for i := range c.Methods {
		if c.Methods[i].Name == name {
			return &c.Methods[i]
		}
	}
	return nil
}

func (c *Class) attribute(name string) *Attribute {
	for i := range c.Attributes {
		if c.Attributes[i].Name == name {
			return &c.Attributes[i]
		}
	}
	return nil
}

// Help is the text help(obj) shows for an object of the class.
func (c *Class) Help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "class %s", c.Name)
	if c.Description != "" {
		b.WriteString("\n" + indent(c.Description))
	}
	if len(c.Attributes) > 0 {
		b.WriteString("\n\nAttributes (read from the host at each access):")
		for _, a := range c.Attributes {
			t := a.Type.pyName()
			if a.Optional {
				t += " | None"
			}
			fmt.Fprintf(&b, "\n    %s: %s", a.Name, t)
			if a.Description != "" {
				b.WriteString(" — " + a.Description)
			}
		}
	}
	if len(c.Methods) > 0 {
		b.WriteString("\n\nMethods:")
		for _, m := range c.Methods {
			fmt.Fprintf(&b, "\n    %s", m.Signature())
			if d, _, _ := strings.Cut(m.Description, "\n"); d != "" {
				fmt.Fprintf(&b, "\n        %s", d)
			}
		}
	}
	return b.String()
}

// ErrUnknownClass matches Registry.Object errors for a value whose Go type
// no registered class has.
var ErrUnknownClass = errors.New("tools: no host class registered for this Go type")
