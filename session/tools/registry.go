package tools

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// Names of the introspection built-ins every Host of a Registry offers.
const (
	ListFunctionsName = "list_functions"
	HelpName          = "help"
)

// Registry holds host functions by name. Its Host offers them to Python
// together with two introspection built-ins: list_functions(category=None),
// which returns a list of dicts (name, category, signature, description),
// and help(name=None), which shows a function's signature, description,
// parameters and return value (or, without a name, an overview by
// category). Monty has no built-in help, so the name is free; when a run
// has an Observer (agent.Run and agent.Executor give it one) help prints
// its text like CPython's help and returns None, otherwise it returns the
// text.
//
// A Registry is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	funcs   map[string]Function
	classes map[string]*Class
	byType  map[reflect.Type]*Class
	byID    map[object.UUID]*Class
	objects map[object.UUID]hostObject
	globals map[string]object.Value
	// namespaces are the MCP servers' namespace classes by name
	// (AddNamespace); each has one object, in objects.
	namespaces map[string]nsEntry
}

// taken reports whether name is the name of a function, class, global,
// namespace or introspection built-in; callers hold mu.
func (r *Registry) taken(name string) bool {
	_, fn := r.funcs[name]
	_, global := r.globals[name]
	_, ns := r.namespaces[name]
	return fn || global || ns || r.classes[name] != nil || name == ListFunctionsName || name == HelpName
}

// NewRegistry returns a registry holding fns (see Register).
func NewRegistry(fns ...Function) (*Registry, error) {
	r := &Registry{funcs: map[string]Function{}, classes: map[string]*Class{},
		byType: map[reflect.Type]*Class{}, byID: map[object.UUID]*Class{}, objects: map[object.UUID]hostObject{}, globals: map[string]object.Value{}, namespaces: map[string]nsEntry{}}
	return r, r.Register(fns...)
}

// Register adds functions. It fails, adding none of them, with an error
// matching ErrInvalidFunction when a function is malformed or its name is
// taken (by another function or an introspection built-in).
func (r *Registry) Register(fns ...Function) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for i := range fns {
		f := &fns[i]
		if err := f.validate(); err != nil {
			return err
		}
		if f.Approval {
			return fmt.Errorf("%w: %s: only a method can wait for approval", ErrInvalidFunction, f.Name)
		}
		if r.taken(f.Name) || seen[f.Name] {
			return fmt.Errorf("%w: the name %s is already taken", ErrInvalidFunction, f.Name)
		}
		seen[f.Name] = true
	}
	for _, f := range fns {
		f.Params = slices.Clone(f.Params)
		if f.Category == "" {
			f.Category = DefaultCategory
		}
		r.funcs[f.Name] = f
	}
	return nil
}

// sorted returns the functions by category, then name.
func (r *Registry) sorted() []Function {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Function, 0, len(r.funcs))
	for _, f := range r.funcs {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Function) int {
		return cmp.Or(cmp.Compare(a.Category, b.Category), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Schemas returns the schemas of the registered functions, sorted by
// category, then name.
func (r *Registry) Schemas() []Schema {
	fns := r.sorted()
	out := make([]Schema, len(fns))
	for i, f := range fns {
		out[i] = f.Schema
		out[i].Params = slices.Clone(f.Params)
	}
	return out
}

// Tools returns every registered function as a tool definition, in the
// order of Schemas, so the same functions can be offered to a model
// directly.
func (r *Registry) Tools() []Tool {
	ss := r.Schemas()
	out := make([]Tool, len(ss))
	for i, s := range ss {
		out[i] = s.Tool()
	}
	return out
}

// Host returns a runtime.Host offering the functions, classes and globals
// registered now plus list_functions and help (those registered later need
// a new Host), and serving the registry's host objects (Object, ObjectKey;
// objects made later are served too).
// Set its MaxCalls, MaxCallTime and OS as needed; host calls are
// reported to the run's Observer (WithObserver) when it has one.
func (r *Registry) Host() *runtime.Host {
	fns, classes := r.sorted(), r.sortedClasses()
	byName := make(map[string]runtime.Function, len(fns)+2)
	for i := range fns {
		f := &fns[i]
		byName[f.Name] = runtime.Function{Func: hostFunc(f), Async: f.Async, Doc: f.Help()}
	}
	list := &Function{
		Schema: Schema{Name: ListFunctionsName, Category: "introspection",
			Description: "List the host functions you can call.",
			Params:      []Param{{Name: "category", Type: String, Optional: true, Description: "only this category"}},
			Returns:     "a list of dicts with name, category, signature and description"},
		Handler: func(_ context.Context, a Args) (object.Value, error) {
			return listFunctions(fns, r.namespaceClasses(), a)
		},
		noEvents: true,
	}
	help := &Function{
		Schema: Schema{Name: HelpName, Category: "introspection",
			Description: "Show how to call a host function or use a host object, or list them all.",
			Params:      []Param{{Name: "name", Type: Any, Optional: true, Description: "a function or class name, a host function, object or class"}}},
		Handler: func(ctx context.Context, a Args) (object.Value, error) {
			return help(ctx, fns, classes, r.namespaceClasses(), a)
		},
		noEvents: true,
	}
	for _, f := range []*Function{list, help} {
		byName[f.Name] = runtime.Function{Func: hostFunc(f), Doc: f.Help()}
	}
	return &runtime.Host{Functions: byName, Values: r.hostValues(), Objects: objectHandler{r}}
}

// listFunctions lists the functions, then the tools of each namespace
// (named "ns.tool", in category ns).
func listFunctions(fns []Function, namespaces []*Class, a Args) (object.Value, error) {
	cat, filter := a["category"].(object.Str)
	out := object.List{}
	add := func(name, category string, f Function) {
		if filter && category != string(cat) {
			return
		}
		out = append(out, object.Dict{
			{Key: object.Str("name"), Value: object.Str(name)},
			{Key: object.Str("category"), Value: object.Str(category)},
			{Key: object.Str("signature"), Value: object.Str(f.Signature())},
			{Key: object.Str("description"), Value: object.Str(f.Description)},
		})
	}
	for _, f := range fns {
		add(f.Name, f.Category, f)
	}
	for _, ns := range namespaces {
		for _, m := range ns.Methods {
			f := m
			f.Name = ns.Name + "." + m.Name
			add(f.Name, ns.Name, f)
		}
	}
	return out, nil
}

func help(ctx context.Context, fns []Function, classes, namespaces []*Class, a Args) (object.Value, error) {
	text := overview(fns, classes, namespaces)
	if topic, ok := a["name"]; ok {
		var err error
		if text, err = helpOn(topic, fns, append(slices.Clone(classes), namespaces...)); err != nil {
			return nil, err
		}
	}
	if obs := ObserverFrom(ctx); obs != nil {
		obs.Print(runtime.Stdout, text+"\n")
		return object.None{}, nil
	}
	return object.Str(text), nil
}

// helpOn is the help text on one topic: a function or class by name or
// value, a host object, or a method as "Class.method".
func helpOn(topic object.Value, fns []Function, classes []*Class) (string, error) {
	var name string
	switch t := topic.(type) {
	case object.Str:
		name = string(t)
	case object.Function:
		name = t.Name
	case object.ClassType:
		name = t.Name
	case object.Instance:
		name = t.Class.Name
	default:
		return "", &runtime.Exception{Type: "TypeError", Message: fmt.Sprintf("help() takes a host function, class or object, or its name, not %s", topic.Kind())}
	}
	if i := slices.IndexFunc(fns, func(f Function) bool { return f.Name == name }); i >= 0 {
		return fns[i].Help(), nil
	}
	class, method, _ := strings.Cut(name, ".")
	if i := slices.IndexFunc(classes, func(c *Class) bool { return c.Name == class }); i >= 0 {
		c := classes[i]
		if method == "" {
			return c.Help(), nil
		}
		if m := c.method(method); m != nil {
			return m.Help(), nil
		}
	}
	return "", &runtime.Exception{Type: "ValueError", Message: fmt.Sprintf("no host function or class named %q; help() lists them", name)}
}

// overview lists every function by category with the first line of its
// description, then the classes and the MCP servers' namespaces.
func overview(fns []Function, classes, namespaces []*Class) string {
	if len(fns) == 0 && len(classes) == 0 && len(namespaces) == 0 {
		return "No host functions are available."
	}
	var b strings.Builder
	if len(fns) > 0 {
		b.WriteString("Host functions (call them like Python functions; help('name') shows one in full):")
	}
	cat := ""
	for _, f := range fns {
		if f.Category != cat {
			cat = f.Category
			fmt.Fprintf(&b, "\n\n%s:", cat)
		}
		fmt.Fprintf(&b, "\n    %s", f.Signature())
		if d, _, _ := strings.Cut(f.Description, "\n"); d != "" {
			fmt.Fprintf(&b, "\n        %s", d)
		}
	}
	if len(classes) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("Host classes (the host gives you their objects; help(obj) shows attributes and methods):")
		for _, c := range classes {
			fmt.Fprintf(&b, "\n    %s", c.Name)
			if d, _, _ := strings.Cut(c.Description, "\n"); d != "" {
				fmt.Fprintf(&b, "\n        %s", d)
			}
		}
	}
	if len(namespaces) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("MCP servers (their tools are async: await ns.tool(name=value); help(ns) or help('ns.tool') shows them in full):")
		for _, ns := range namespaces {
			names := make([]string, len(ns.Methods))
			for i, m := range ns.Methods {
				names[i] = m.Name
			}
			fmt.Fprintf(&b, "\n    %s: %s", ns.Name, strings.Join(names, ", "))
		}
	}
	return b.String()
}

// hostFunc adapts f to the runtime: binds the arguments, reports the call
// to the run's event stream and runs the handler.
func hostFunc(f *Function) runtime.HostFunc {
	return func(ctx context.Context, args []object.Value, kwargs []object.Pair) (object.Value, error) {
		var obs Observer
		if !f.noEvents {
			obs = ObserverFrom(ctx)
		}
		bound, err := f.bind(args, kwargs)
		var id string
		if obs != nil {
			id = obs.CallStarted(f.Name, argsJSON(f, bound, args, kwargs))
		}
		var v object.Value
		if err == nil {
			if id != "" {
				ctx = context.WithValue(ctx, callIDKey{}, id)
			}
			v, err = f.call(ctx, bound)
		}
		if obs != nil {
			obs.CallFinished(id, v, err)
		}
		return v, err
	}
}
