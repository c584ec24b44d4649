package protocol

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// importStubsCallID is the call id of the OS call asking for module stubs:
// not one of the interpreter's, which the feed has not started yet.
const importStubsCallID = ^uint32(0)

// builtinModules are the modules the sandbox or the checker provide
// themselves: their imports never ask the host for stubs.
var builtinModules = map[string]bool{}

func init() {
	for _, m := range strings.Fields(`asyncio base64 binascii bisect collections copy csv dataclasses datetime decimal
		functools gc hashlib itertools json math os pathlib posixpath random re sys time tomllib typing unicodedata
		__future__ __main__ _collections_abc _typeshed abc builtins enum genericpath ty_extensions types typing_extensions`) {
		builtinModules[m] = true
	}
}

var (
	importLine = regexp.MustCompile(`^\s*import\s+(.+)$`)
	fromLine   = regexp.MustCompile(`^\s*from\s+([A-Za-z_][\w.]*)\s+import\b`)
	identifier = regexp.MustCompile(`^[A-Za-z_]\w*$`)
)

// importedModules lists the top-level modules code imports, in order,
// leaving out the sandbox's and the checker's own.
func importedModules(code string) []string {
	var out []string
	add := func(dotted string) {
		top, _, _ := strings.Cut(strings.TrimSpace(dotted), ".")
		if identifier.MatchString(top) && !builtinModules[top] && !slices.Contains(out, top) {
			out = append(out, top)
		}
	}
	for _, line := range strings.Split(code, "\n") {
		if m := fromLine.FindStringSubmatch(line); m != nil {
			add(m[1])
			continue
		}
		if m := importLine.FindStringSubmatch(line); m != nil {
			stmt, _, _ := strings.Cut(m[1], "#")
			stmt, _, _ = strings.Cut(stmt, ";")
			for _, part := range strings.Split(stmt, ",") {
				name, _, _ := strings.Cut(strings.TrimSpace(part), " ")
				add(name)
			}
		}
	}
	return out
}

// pendingFeed is a feed waiting for the parent's module stubs before its
// type check.
type pendingFeed struct {
	feed    *pb.Feed
	inputs  []runtime.Input
	modules []string
}

// askStubs returns the OS call asking the parent for the stubs of the
// modules f imports that were not asked for yet, or nil when there are none.
func (w *Worker) askStubs(f *pb.Feed, inputs []runtime.Input) *pb.ChildEvent {
	var ask []string
	for _, m := range importedModules(f.Code) {
		if !w.asked[m] {
			ask = append(ask, m)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	if w.asked == nil {
		w.asked = map[string]bool{}
	}
	for _, m := range ask {
		w.asked[m] = true
	}
	w.awaitingStubs = &pendingFeed{feed: f, inputs: inputs, modules: ask}
	return &pb.ChildEvent{Kind: &pb.ChildEvent_OsCall{OsCall: &pb.OsCall{
		CallId: importStubsCallID,
		Call:   &pb.OsCall_ImportStubs_{ImportStubs: &pb.OsCall_ImportStubs{Modules: ask}},
	}}}
}

// takeStubs records the parent's answer to an import_stubs call: a dict of
// dotted module paths (of the modules asked for) to stub text or None;
// "not found" and "not handled" mean no stubs.
func (w *Worker) takeStubs(r *pb.ResumeCall) error {
	p := w.awaitingStubs
	v := object.Value(object.None{})
	switch k := r.GetResult().GetKind().(type) {
	case *pb.ExtFunctionResult_ReturnValue:
		vs, err := DecodeValues(r.GetValues(), k.ReturnValue)
		if err != nil {
			return err
		}
		v = vs[0]
	case *pb.ExtFunctionResult_NotFound, *pb.ExtFunctionResult_NotHandled:
	default:
		return fmt.Errorf("module stubs are answered with a dict of module paths to stub text")
	}
	d, ok := v.(object.Dict)
	if _, none := v.(object.None); !ok && !none {
		return fmt.Errorf("module stubs are answered with a dict of module paths to stub text, not %s", object.Repr(v))
	}
	for _, pair := range d {
		name, ok := pair.Key.(object.Str)
		top, _, _ := strings.Cut(string(name), ".")
		if !ok || !slices.Contains(p.modules, top) {
			return fmt.Errorf("stubs for %s, which was not asked for", object.Repr(pair.Key))
		}
		switch src := pair.Value.(type) {
		case object.Str:
			if w.stubs == nil {
				w.stubs = map[string]string{}
			}
			w.stubs[string(name)] = string(src)
		case object.None:
		default:
			return fmt.Errorf("the stubs of %s are not text", name)
		}
	}
	return nil
}

// moduleStubs are the module stubs the parent gave, for the checker.
func (w *Worker) moduleStubs() []typecheck.ModuleStub {
	names := make([]string, 0, len(w.stubs))
	for n := range w.stubs {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]typecheck.ModuleStub, len(names))
	for i, n := range names {
		out[i] = typecheck.ModuleStub{Name: n, Source: w.stubs[n]}
	}
	return out
}
