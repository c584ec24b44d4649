package runtime

import (
	"fmt"
	"slices"
	"strings"
)

// Suspended is the error Drive returns when the execution waits on calls
// to External functions: the execution stays paused (Pause is the
// *FunctionCall of a sync call, or *AwaitFutures), and may be dumped,
// moved and loaded elsewhere. Answer it with Execution.Resume (Return or
// Raise for a FunctionCall, Resolve for AwaitFutures with results for
// some of Waiting), then call Host.Continue with the ids still waiting.
type Suspended struct {
	// Calls are the External calls this Drive saw, in the order made.
	Calls []*FunctionCall
	// Waiting are the ids of every External call the execution now waits
	// on: the paused call, or the awaited futures (including ones made
	// before this Drive, passed to Continue).
	Waiting []uint32
}

// Error names the calls the execution waits on.
func (s *Suspended) Error() string {
	names := make([]string, len(s.Calls))
	for i, c := range s.Calls {
		names[i] = c.Name
	}
	return fmt.Sprintf("monty: execution suspended at calls its caller answers (%s)", strings.Join(names, ", "))
}

// externalCall answers a call of an External function: a future when it
// is async (awaited at once or not: see callFunction), else the run
// suspends right there.
func (d *drive) externalCall(f Function, p *FunctionCall) (Answer, error) {
	call := *p
	if f.Async {
		d.external[p.CallID] = &call
		return Pending(), nil
	}
	if d.hostFutures() {
		// Their results would be lost with this Drive: the code must
		// await them first.
		return Raise("RuntimeError", fmt.Sprintf(
			"%s() is answered by the caller: await the host's async calls still running before calling it", p.Name)), nil
	}
	return Answer{}, &Suspended{Calls: d.newExternal(&call), Waiting: []uint32{p.CallID}}
}

// newExternal lists the External calls made in this Drive, then extra.
func (d *drive) newExternal(extra ...*FunctionCall) []*FunctionCall {
	var out []*FunctionCall
	for _, c := range d.external {
		if c != nil {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *FunctionCall) int { return int(a.CallID) - int(b.CallID) })
	return append(out, extra...)
}

// awaitsExternal reports whether p awaits calls the caller answers.
func (d *drive) awaitsExternal(p *AwaitFutures) bool {
	return slices.ContainsFunc(p.CallIDs, func(id uint32) bool { _, ok := d.external[id]; return ok })
}

// suspendAwait suspends an await whose futures only the caller can
// resolve (none ready, no host call running): nil when it awaits none, or
// when suspending would lose results of the host's own async calls.
func (d *drive) suspendAwait(p *AwaitFutures) *Suspended {
	var waiting []uint32
	for _, id := range p.CallIDs {
		if _, ok := d.external[id]; ok {
			waiting = append(waiting, id)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	if d.hostFutures() {
		// Results of the host's own async calls the code has not awaited
		// yet would be lost with this Drive.
		return nil
	}
	return &Suspended{Calls: d.newExternal(), Waiting: waiting}
}

// hostFutures reports results of the host's own async calls that the run
// would lose if it suspended now: calls still running, or finished but
// not yet awaited by the code.
func (d *drive) hostFutures() bool { return d.inflight > 0 || len(d.ready) > 0 }
