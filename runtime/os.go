package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
)

// OSHandler serves the OS calls of a run (files, environment, clocks,
// imports). Return ErrNotHandled to let the next handler of a Chain try; an
// *Exception raises that Python exception; other errors raise OSError.
// Handlers must be safe for concurrent use when shared between runs.
type OSHandler interface {
	HandleOS(ctx context.Context, call *OSCall) (object.Value, error)
}

// ErrNotHandled is returned by an OSHandler that does not serve a call.
var ErrNotHandled = errors.New("monty: OS call not handled")

// OSFunc adapts a function to OSHandler.
type OSFunc func(ctx context.Context, call *OSCall) (object.Value, error)

// HandleOS calls f.
func (f OSFunc) HandleOS(ctx context.Context, call *OSCall) (object.Value, error) {
	return f(ctx, call)
}

// Chain offers each call to its handlers in order; the first that does not
// return ErrNotHandled answers. A call no handler serves raises what
// upstream Monty raises for it: a file operation PermissionError, anything
// else RuntimeError (see unserved).
type Chain []OSHandler

// HandleOS implements OSHandler.
func (c Chain) HandleOS(ctx context.Context, call *OSCall) (object.Value, error) {
	for _, h := range c {
		v, err := h.HandleOS(ctx, call)
		if !errors.Is(err, ErrNotHandled) {
			return v, err
		}
	}
	return nil, ErrNotHandled
}

// unserved is the exception an OS call no handler serves raises, worded as
// upstream Monty words it (monty-types' OsFunctionCall::on_no_handler), so
// that code takes the same except branch under both: a file operation
// (open and the Path calls) is a PermissionError naming its path, such as
// "Permission denied: '/etc/passwd'"; anything else (os.getenv, os.environ,
// os.urandom, a host clock, a sleep left to the host) is a RuntimeError
// such as "'os.getenv' is not supported in this environment", a sleep
// named as the code called it (time.sleep, asyncio.sleep). Imports are
// not found instead (ModuleNotFoundError), which the interpreter raises
// itself.
func unserved(call *OSCall) *Exception {
	if strings.HasPrefix(call.Name, "Path.") || call.Name == "open" {
		p, _ := call.Str(0, "path")
		return &Exception{Type: "PermissionError", Message: "Permission denied: " + object.Repr(object.Str(normalizeVirtual(p)))}
	}
	name := call.Name
	switch name { // the interpreter asks every sleep as a system one
	case "system.sleep":
		name = "time.sleep"
	case "system.async_sleep":
		name = "asyncio.sleep"
	}
	return &Exception{Type: "RuntimeError", Message: "'" + name + "' is not supported in this environment"}
}

// Unhandled answers an OS call that nothing serves, as upstream Monty does
// (the interpreter's own default for the call): an import is not found
// (ModuleNotFoundError), a file operation raises PermissionError naming its
// path, anything else RuntimeError. A host that forwards OS calls elsewhere
// (a protocol worker, say) answers with it when the other side declines.
func Unhandled(call *OSCall) Answer {
	if call.Name == "import" || call.Name == "import_stubs" {
		return NotFound()
	}
	return raiseFor(unserved(call))
}

// normalizeVirtual resolves "." and ".." and drops empty components of an
// absolute sandbox path, as Monty's normalize_virtual_path does (the
// interpreter has made relative paths absolute already); "" stays "".
func normalizeVirtual(p string) string {
	if p == "" {
		return p
	}
	return path.Clean("/" + p)
}

// osCall answers an OSCall: sleeps directly, the rest through Host.OS. A
// non-nil error stops the run (the time limit, or cancellation).
func (d *drive) osCall(c *OSCall) (Answer, error) {
	switch c.Name {
	case "system.sleep", "time.sleep":
		if err := d.sleep(d.ctx, sleepArg(c)); err != nil {
			return abortFor(err), err
		}
		return Return(object.None{}), nil
	case "asyncio.sleep", "system.async_sleep":
		dur := sleepArg(c)
		if c.EagerAwait {
			if err := d.sleep(d.ctx, dur); err != nil {
				return abortFor(err), err
			}
			return Return(object.None{}), nil
		}
		d.startAsync(c.CallID, func(ctx context.Context) (object.Value, error) {
			return object.None{}, sleepCtx(ctx, dur)
		})
		return Pending(), nil
	}
	handler := d.h.OS
	if handler == nil {
		handler = Chain{}
	}
	v, err := handler.HandleOS(d.ctx, c)
	switch {
	case errors.Is(err, ErrNotHandled):
		return Unhandled(c), nil
	case err != nil:
		var exc *Exception
		if errors.As(err, &exc) {
			return Raise(exc.Type, exc.Message), nil
		}
		return Raise("OSError", err.Error()), nil
	}
	return Return(orNone(v)), nil
}

// sleep waits for dur, or fails at once when the run's time limit would
// pass first (nobody waits for a failure that is certain).
func (d *drive) sleep(ctx context.Context, dur time.Duration) error {
	if d.limit != nil {
		if left := time.Until(d.deadline); dur > left {
			msg := fmt.Sprintf("time limit exceeded: sleeping %s would pass the limit of %s (%s left)",
				dur, d.limit.limit, max(left, 0).Round(time.Millisecond))
			return &Error{Type: "TimeoutError", Message: msg, HasMessage: true, Limit: TimeLimit,
				Text: "TimeoutError: " + msg}
		}
	}
	if err := sleepCtx(ctx, dur); err != nil {
		return stopError(ctx, nil)
	}
	return nil
}

// sleepArg is the delay of a sleep call; the longest one Go can express
// when it is too large (the time limit, if any, stops it first).
func sleepArg(c *OSCall) time.Duration {
	if len(c.Args) == 1 {
		if f, ok := c.Args[0].(object.Float); ok && f > 0 {
			if s := float64(f); s < float64(math.MaxInt64)/float64(time.Second) {
				return time.Duration(s * float64(time.Second))
			}
			return time.Duration(math.MaxInt64)
		}
	}
	return 0
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Env serves os.getenv and os.environ from a fixed map. The real process
// environment is never visible.
type Env map[string]string

// HandleOS implements OSHandler.
func (e Env) HandleOS(_ context.Context, call *OSCall) (object.Value, error) {
	switch call.Name {
	case "os.getenv":
		key, _ := call.Str(0, "key")
		if v, ok := e[key]; ok {
			return object.Str(v), nil
		}
		if def, ok := call.Arg(1, "default"); ok {
			return def, nil
		}
		return object.None{}, nil
	case "os.environ":
		d := object.Dict{}
		for _, k := range slices.Sorted(maps.Keys(e)) {
			d = append(d, object.Pair{Key: object.Str(k), Value: object.Str(e[k])})
		}
		return d, nil
	}
	return nil, ErrNotHandled
}

// Clock answers the clock reads of programs compiled WithHostClock.
type Clock struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Location is the zone of naive date.today() and datetime.now(); nil means UTC.
	Location *time.Location
}

// HandleOS implements OSHandler.
func (c Clock) HandleOS(_ context.Context, call *OSCall) (object.Value, error) {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	loc := c.Location
	if loc == nil {
		loc = time.UTC
	}
	switch call.Name {
	case "date.today":
		t := now.In(loc)
		return object.Date{Year: t.Year(), Month: int(t.Month()), Day: t.Day()}, nil
	case "datetime.now":
		if tz, ok := call.Arg(0, "tz"); ok {
			if z, ok := tz.(object.TimeZone); ok {
				t := now.In(time.FixedZone("", z.Offset))
				dt := object.DateTimeFromTime(t)
				dt.TZName = z.Name
				return dt, nil
			}
		}
		dt := object.DateTimeFromTime(now.In(loc))
		dt.Offset, dt.TZName = nil, nil
		return dt, nil
	case "time.time":
		which, _ := call.Str(0, "caller")
		switch which {
		case "time.time_ns":
			return object.Int(now.UnixNano()), nil
		case "time.monotonic_ns", "time.perf_counter_ns":
			return object.Int(now.UnixNano()), nil
		}
		return object.Float(float64(now.UnixNano()) / 1e9), nil
	}
	return nil, ErrNotHandled
}
