package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
)

const (
	// caseTimeLimit bounds the Python time of one case, as natively.
	caseTimeLimit = 10 * time.Second
	// caseWallLimit bounds one case including host sleeps.
	caseWallLimit = 60 * time.Second
	// recursionLimit is monty's own harness's (the recursion tracebacks count on it).
	recursionLimit = 50
)

// result is a case outcome, as the native harness reports it.
type result struct {
	Name   string `json:"name"`
	Status string `json:"status"` // pass, fail or skip
	Detail string `json:"detail"`
}

// runCase runs one case through the Go runtime and judges it.
func runCase(ctx context.Context, eng *runtime.Engine, c *testCase) result {
	r := result{Name: c.Name}
	if len(c.Config.Unknown) > 0 {
		r.Status, r.Detail = "skip", "unknown header keys: "+strings.Join(c.Config.Unknown, ", ")
		return r
	}
	if what := needsTestHooks(c.Code); what != "" {
		r.Status = "skip"
		r.Detail = "needs " + what + ", which only monty's test-hooks build has (neither the wasm module nor this harness enables it)"
		return r
	}
	v, err, infra := execute(ctx, eng, c)
	if errors.Is(infra, errHostChanged) {
		r.Status, r.Detail = "fail", infra.Error()
		return r
	}
	if infra != nil {
		r.Status, r.Detail = "fail", "runtime error (not a Python exception): "+shorten(infra.Error())
		if c.Config.XfailMonty {
			r.Detail = "xfail (monty) case hit a runtime error: " + r.Detail
		}
		return r
	}
	why := judge(c, v, err)
	switch {
	case !c.Config.XfailMonty && why == "":
		r.Status = "pass"
	case !c.Config.XfailMonty:
		r.Status, r.Detail = "fail", why
	case why == "":
		r.Status, r.Detail = "fail", "xfail (monty): expected to fail but passed"
	default:
		r.Status, r.Detail = "pass", "xfail (monty) failed as expected: "+why
	}
	return r
}

// judge compares an outcome with the expectation; "" means it matches.
func judge(c *testCase, v object.Value, err *runtime.Error) string {
	eq := func(what, want, got string) string {
		if want == got {
			return ""
		}
		return fmt.Sprintf("%s: expected %q, got %q", what, shorten(want), shorten(got))
	}
	if err == nil {
		switch c.Kind {
		case expectReturn:
			return eq("return repr", c.Want, object.Repr(v))
		case expectReturnStr:
			return eq("return str", c.Want, pyStr(v))
		case expectReturnType:
			return eq("return type", c.Want, typeName(v))
		case expectRaise, expectTraceback:
			return fmt.Sprintf("expected exception %s, got value %s", shorten(c.Want), shorten(object.Repr(v)))
		}
		return ""
	}
	switch c.Kind {
	case expectRaise:
		return eq("exception", c.Want, excRepr(err))
	case expectTraceback:
		return eq("traceback", c.Want, err.Text)
	}
	return "unexpected exception: " + shorten(err.Text)
}

// excRepr is monty's MontyException::py_repr: Type('message') or Type().
func excRepr(e *runtime.Error) string {
	if !e.HasMessage {
		return e.Type + "()"
	}
	return e.Type + "(" + object.Repr(object.Str(e.Message)) + ")"
}

// pyStr is Python's str(): text as is, anything else its repr.
func pyStr(v object.Value) string {
	if s, ok := v.(object.Str); ok {
		return string(s)
	}
	return object.Repr(v)
}

// typeName is the Python type name of a result value.
func typeName(v object.Value) string {
	switch x := v.(type) {
	case object.None:
		return "NoneType"
	case object.Bool:
		return "bool"
	case object.Int, object.BigInt:
		return "int"
	case object.Float:
		return "float"
	case object.Complex:
		return "complex"
	case object.Str:
		return "str"
	case object.Bytes:
		return "bytes"
	case object.List:
		return "list"
	case object.Tuple:
		return "tuple"
	case object.Dict:
		return "dict"
	case object.Set:
		return "set"
	case object.FrozenSet:
		return "frozenset"
	case object.NamedTuple:
		return x.TypeName
	case object.Instance:
		return x.Class.Name
	case object.ClassType, object.TypeObject:
		return "type"
	case object.Exception:
		return x.Type
	case object.Path:
		return "PosixPath"
	case object.Date:
		return "date"
	case object.DateTime:
		return "datetime"
	case object.Time:
		return "time"
	case object.TimeDelta:
		return "timedelta"
	case object.TimeZone:
		return "timezone"
	case object.Function:
		return "function"
	case object.BuiltinFunction:
		return "builtin_function_or_method"
	case object.Module:
		return "module"
	case object.Decimal:
		return "Decimal"
	case object.Ellipsis:
		return "ellipsis"
	case object.NotImplemented:
		return "NotImplementedType"
	}
	return v.Kind().String()
}

// execute compiles and runs a case on a fresh interpreter, answering its
// pauses. It returns the value, or the Python exception, or (infra) an
// error that is neither.
func execute(ctx context.Context, eng *runtime.Engine, c *testCase) (v object.Value, pe *runtime.Error, infra error) {
	ctx, cancel := context.WithTimeout(ctx, caseWallLimit)
	defer cancel()
	it, err := eng.NewInterpreter(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer it.Close(context.Background())
	// MaxOutput as natively: monty's default print collection cap (10 MiB).
	it.SetLimits(runtime.Limits{MaxDuration: caseTimeLimit, MaxRecursion: recursionLimit, MaxOutput: 10 << 20})

	opts := []runtime.CompileOption{runtime.WithScriptName(c.FileName)}
	if c.Config.Timezone != "" {
		// As natively: OsPolicy.timezone = SandboxTimeZone::named(...).
		opts = append(opts, runtime.WithTimezone(c.Config.Timezone))
	}
	var inputs []object.Value
	var mount runtime.OSHandler
	if c.Config.MountFS {
		dir, err := makeFixture()
		defer removeFixture(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("creating the fixture directory: %w", err)
		}
		before, err := snapshot(dir)
		if err != nil {
			return nil, nil, err
		}
		// As natively, and as monty's own harness does: an overlay over the
		// fixture (MountMode::OverlayMemory); the variants mount it directly.
		var fs vfs.MountHandler
		if c.Mount == vfs.MountOverlay {
			fs, err = vfs.OpenOverlayFS(dir, "/mnt", vfs.OverlayOptions{})
		} else {
			fs, err = vfs.OpenDirFS(dir, "/mnt", vfs.DirFSOptions{ReadWrite: c.Mount == vfs.MountReadWrite})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("mounting the fixture: %w", err)
		}
		defer fs.Close()
		if c.Mount != vfs.MountReadWrite {
			// Neither an overlay nor a read-only mount may change the host.
			defer func() {
				if infra != nil {
					return
				}
				after, err := snapshot(dir)
				if err == nil && !maps.Equal(before, after) {
					err = fmt.Errorf("%w: %s", errHostChanged, diffSnapshots(before, after))
				}
				if err != nil {
					v, pe, infra = nil, nil, err
				}
			}()
		}
		mount = fs
		// As natively, and as monty's own harness does: the run starts in
		// the mount (MontyRun::set_cwd("/mnt")).
		opts = append(opts, runtime.WithInputs("root"), runtime.WithCwd("/mnt"))
		inputs = append(inputs, object.Path("/mnt"))
	}
	p, err := it.Compile(ctx, c.Code, opts...)
	if err != nil {
		return pyErr(err)
	}
	if !c.Config.CallExternal && mount == nil {
		// Standard execution, as monty's own harness runs these cases (and
		// the native harness does): no host at all.
		v, err := p.Run(ctx, inputs...)
		if err != nil {
			return pyErr(err)
		}
		return v, nil, nil
	}
	ex, err := p.Start(ctx, inputs...)
	if err != nil {
		return pyErr(err)
	}
	h := newHost(c.Config.CallExternal, mount)
	for !ex.Done() {
		a := h.answer(ctx, ex.Pause())
		if err := ex.Resume(ctx, a); err != nil {
			return pyErr(err)
		}
	}
	return ex.Value(), nil, nil
}

// pyErr splits an error into a Python exception or an infrastructure error.
func pyErr(err error) (object.Value, *runtime.Error, error) {
	var e *runtime.Error
	if errors.As(err, &e) {
		return nil, e, nil
	}
	return nil, nil, err
}

// answer computes the reply to one pause.
func (h *host) answer(ctx context.Context, p runtime.Pause) runtime.Answer {
	switch p := p.(type) {
	case *runtime.FunctionCall:
		return h.call(p)
	case *runtime.NameLookup:
		return h.lookup(p)
	case *runtime.OSCall:
		return h.osCall(ctx, p)
	case *runtime.AwaitFutures:
		results, ok := h.resolve(p.CallIDs)
		if !ok {
			return runtime.Abort("RuntimeError", "awaiting futures the host never started")
		}
		return runtime.Resolve(results...)
	}
	return runtime.Abort("RuntimeError", fmt.Sprintf("unknown pause %T", p))
}

// osCall answers an OSCall: sleeps, then the mount, then the
// call-external services, then the no-handler answer.
func (h *host) osCall(ctx context.Context, c *runtime.OSCall) runtime.Answer {
	switch c.Name {
	case "time.sleep", "system.sleep":
		t := time.NewTimer(min(sleepArg(c), caseTimeLimit))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return runtime.Return(object.None{})
	case "asyncio.sleep", "system.async_sleep":
		h.addPending(c.CallID, min(sleepArg(c), caseTimeLimit), runtime.FutureResult{Value: object.None{}})
		return runtime.Pending()
	}
	if h.mount != nil {
		v, err := h.mount.HandleOS(ctx, c)
		var exc *runtime.Exception
		switch {
		case err == nil:
			return runtime.Return(v)
		case errors.As(err, &exc):
			return runtime.Raise(exc.Type, exc.Message)
		case !errors.Is(err, runtime.ErrNotHandled):
			return runtime.Raise("OSError", err.Error())
		}
	}
	if h.external {
		if a, ok := h.externalOS(c); ok {
			return a
		}
	}
	return noHandler(c)
}

func sleepArg(c *runtime.OSCall) time.Duration {
	if len(c.Args) == 1 {
		if f, ok := c.Args[0].(object.Float); ok && f > 0 {
			return time.Duration(float64(f) * float64(time.Second))
		}
	}
	return 0
}
