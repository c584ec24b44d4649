package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// Observer receives what one run's host functions do, as it happens:
// package agent's run recorder is one, and turns it into the run's events.
// A run gives its Observer to the calls it makes through the context
// (WithObserver); a call with none is not observed. Implementations must
// be safe for concurrent use: async calls report from their goroutines.
type Observer interface {
	// CallStarted reports that the function named name (a method as
	// "Class.method") was called with args, a JSON object, and returns
	// the call's id for the reports that follow.
	CallStarted(name, args string) (id string)
	// CallProgress reports the progress of call id, still under way
	// (an MCP server's progress notification, for example).
	CallProgress(id string, progress, total float64, message string)
	// CallLog reports a message logged at level while call id was under
	// way.
	CallLog(id, level, message string)
	// CallFinished reports the outcome of call id: its value, or the
	// error it raised.
	CallFinished(id string, v object.Value, err error)
	// Print is output the run prints (help() prints its text).
	Print(stream runtime.Stream, text string)
}

type observerKey struct{}

type callIDKey struct{}

// WithObserver returns ctx carrying o: the host calls a run makes with
// the returned context report to o.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// ObserverFrom returns the Observer ctx carries, or nil.
func ObserverFrom(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

// CallID returns the id the Observer gave the host call whose handler
// has ctx, or "" when the call is not observed.
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// ValueJSON is v as JSON when JSON can carry it, else its repr as a JSON
// string: how a call's arguments and results are shown to observers.
func ValueJSON(v object.Value) json.RawMessage {
	if b, err := object.ToJSON(v); err == nil {
		return b
	}
	b, _ := json.Marshal(object.Repr(v))
	return b
}

// argsJSON is a call's arguments as a JSON object: by parameter name when
// they bound, else as passed ("args" and "kwargs").
func argsJSON(f *Function, bound Args, args []object.Value, kwargs []object.Pair) string {
	var b strings.Builder
	b.WriteByte('{')
	field := func(name string, v json.RawMessage) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	if bound != nil {
		for _, p := range f.Params {
			if v, ok := bound[p.Name]; ok {
				field(p.Name, ValueJSON(v))
			}
		}
	} else {
		list := make([]string, len(args))
		for i, a := range args {
			list[i] = string(ValueJSON(a))
		}
		field("args", json.RawMessage("["+strings.Join(list, ",")+"]"))
		var kw strings.Builder
		kw.WriteByte('{')
		for i, p := range kwargs {
			if i > 0 {
				kw.WriteByte(',')
			}
			k, _ := json.Marshal(object.ToStr(p.Key))
			kw.Write(k)
			kw.WriteByte(':')
			kw.Write(ValueJSON(p.Value))
		}
		kw.WriteByte('}')
		field("kwargs", json.RawMessage(kw.String()))
	}
	b.WriteByte('}')
	return b.String()
}
