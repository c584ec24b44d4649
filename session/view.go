package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// The JSON view of a session's public globals, kept slot by slot between
// calls: a save computes again only the globals that were rebound since the
// last view of the live REPL, and those on the heap (whose contents can
// change without a rebinding). Functions, classes and modules are never
// JSON. None, bools and ints held inline are written by the host from the
// global's mark, as json.dumps writes them, without running code; the
// other members are computed by Monty's own json module (no user code
// runs, NaN and infinities are refused, non-string keys become strings as
// in CPython); only strings cross the boundary, so values that cannot
// cross it faithfully never do.

// viewSlot is what the view of the live REPL holds of one global slot.
type viewSlot struct {
	name  string
	bound bool   // a bound public global
	json  bool   // its value may be JSON (not a function, class or module)
	stale bool   // member is to be computed (again) at the next view
	text  []byte // the JSON member ("name": value); nil: not JSON, or omitted
}

// viewer is what the last JSON view of a live REPL held, slot by slot,
// and the JSON array of its names; the zero viewer is that of a new REPL,
// or of one whose view is not to be trusted.
type viewer struct {
	slots []viewSlot
	names []byte
}

// globalsView is what a save stores of the globals: their names (also as
// JSON, when known), the JSON view, and the globals left out of it.
type globalsView struct {
	names     []string
	namesJSON []byte
	json      []byte
	omitted   []string
}

// viewTarget is the REPL a view is computed on: its interpreter, and the
// limits to leave it with.
type viewTarget struct {
	it     *runtime.Interpreter
	repl   *runtime.REPL
	limits runtime.Limits
}

// changes reads which public globals of repl were bound, rebound or
// unbound since the view was last taken, for the next snapshot, and
// reports whether any was: then the call changed something, and there is
// no need to compare its state with the stored one. Globals on the heap
// are always listed (their contents can change in place), so they prove
// nothing. The marks are nil when the view starts over (snapshot then
// reads every global).
func (vw *viewer) changes(ctx context.Context, repl *runtime.REPL) (marks []runtime.GlobalMark, rebound bool, err error) {
	if vw.slots == nil {
		return nil, false, nil
	}
	if marks, err = repl.GlobalMarks(context.WithoutCancel(ctx), false); err != nil {
		*vw = viewer{}
		return nil, false, fmt.Errorf("session: reading globals: %w", err)
	}
	rebound = slices.ContainsFunc(marks, func(m runtime.GlobalMark) bool { return m.Tag != runtime.GlobalHeap })
	return marks, rebound, nil
}

// snapshot computes the names and JSON view of the public globals of t,
// in slot order (the order locals() has), within budget bytes of JSON.
// Globals whose JSON does not fit what is left of the budget are left out
// (omitted), and computed again next time. marks are what changes read
// just before, nil to read them here. It runs to completion even when ctx
// is cancelled (the call it follows has already succeeded).
func (vw *viewer) snapshot(ctx context.Context, t viewTarget, budget int64, marks []runtime.GlobalMark) (*globalsView, error) {
	ctx = context.WithoutCancel(ctx)
	slots, known, namesJSON := vw.slots, len(vw.slots), vw.names
	*vw = viewer{} // until this view is complete
	if marks == nil {
		var err error
		if marks, err = t.repl.GlobalMarks(ctx, slots == nil); err != nil {
			return nil, fmt.Errorf("session: reading globals: %w", err)
		}
	}
	for _, m := range marks {
		if m.Slot >= len(slots) {
			slots = append(slots, make([]viewSlot, m.Slot+1-len(slots))...)
		}
		v := &slots[m.Slot]
		bound := m.Tag != runtime.GlobalGone
		if m.Slot < known && v.bound != bound {
			namesJSON = nil // the names before the new slots changed
		}
		v.name, v.bound, v.text = m.Name, bound, nil
		v.json = v.bound && m.Tag != runtime.GlobalCode
		v.stale = v.json
		if text := inlineJSON(m); text != nil {
			v.text, v.stale = member(m.Name, text), false
		}
	}
	var todo []int
	for i, v := range slots {
		if v.stale {
			todo = append(todo, i)
		}
	}
	members, err := t.members(ctx, slots, todo, budget)
	if err != nil {
		return nil, err
	}
	for j, i := range todo {
		slots[i].text, slots[i].stale = members[j].text, members[j].omitted
	}
	g := &globalsView{names: []string{}}
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range slots {
		v := &slots[i]
		if !v.bound {
			continue
		}
		g.names = append(g.names, v.name)
		if namesJSON != nil && i >= known {
			namesJSON = appendName(namesJSON, v.name)
		}
		if v.text != nil && int64(b.Len()+len(v.text)+2) > budget {
			v.text, v.stale = nil, true
		}
		if v.stale {
			g.omitted = append(g.omitted, v.name)
		}
		if v.text == nil {
			continue
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		b.Write(v.text)
	}
	b.WriteByte('}')
	if namesJSON == nil {
		if namesJSON, err = json.Marshal(g.names); err != nil {
			return nil, err
		}
	}
	g.namesJSON, g.json = namesJSON, b.Bytes()
	*vw = viewer{slots: slots, names: namesJSON}
	return g, nil
}

// inlineJSON is the JSON of a global held inline that needs no code to
// write (None, a bool, an int: what Monty's json.dumps writes of them),
// nil for any other.
func inlineJSON(m runtime.GlobalMark) []byte {
	switch m.Tag {
	case runtime.GlobalNone:
		return []byte("null")
	case runtime.GlobalBool:
		return strconv.AppendBool(nil, m.Value != 0)
	case runtime.GlobalInt:
		return strconv.AppendInt(nil, int64(m.Value), 10)
	}
	return nil
}

// member is the JSON member "name": text.
func member(name string, text []byte) []byte {
	key, _ := json.Marshal(name) // a string always marshals
	return append(append(key, ": "...), text...)
}

// appendName adds name to a JSON array of strings.
func appendName(list []byte, name string) []byte {
	text, _ := json.Marshal(name) // a string always marshals
	out := make([]byte, 0, len(list)+len(text)+1)
	out = append(out, list[:len(list)-1]...)
	if len(list) > 2 {
		out = append(out, ',')
	}
	out = append(out, text...)
	return append(out, ']')
}

// viewMember is one global's JSON member, nil when json.dumps refuses the
// value, or omitted when computing it went over the view's budget.
type viewMember struct {
	text    []byte
	omitted bool
}

// members computes the JSON members of the globals in slots at
// indices todo, under the call's time limit and a memory budget of its
// own: the heap as it is plus a few times the view's size cap, so a view
// of a huge structure is cut short instead of taking the host's memory.
// When they do not fit as a whole, each is tried on its own, and those
// that do not fit are omitted.
func (t viewTarget) members(ctx context.Context, slots []viewSlot, todo []int, budget int64) ([]viewMember, error) {
	if len(todo) == 0 {
		return nil, nil
	}
	used, err := t.it.MemoryUsage(ctx)
	if err != nil {
		return nil, fmt.Errorf("session: reading globals: %w", err)
	}
	lim := t.limits
	lim.MaxMemory = used + 4*budget + 8<<20
	lim.MaxResult = 2*budget + 1<<20
	t.it.SetLimits(lim)
	defer t.it.SetLimits(t.limits)
	names := make([]string, len(todo))
	for j, i := range todo {
		names[j] = slots[i].name
	}
	out, err := t.values(ctx, names)
	if err == nil || !overBudget(err) {
		if err != nil {
			err = fmt.Errorf("session: reading globals: %w", err)
		}
		return out, err
	}
	// Too large as a whole: one global at a time.
	out = make([]viewMember, len(names))
	for j, name := range names {
		one, err := t.values(ctx, names[j:j+1])
		switch {
		case overBudget(err):
			out[j].omitted = true
		case err != nil:
			return nil, fmt.Errorf("session: reading global %q: %w", name, err)
		default:
			out[j] = one[0]
		}
	}
	return out, nil
}

// values runs json.dumps over the globals names, at module level,
// and returns their members. The names are written into the code (Python
// binds only identifiers as globals; anything else is refused, never
// written), so it costs what they are, not what all the globals are. The
// code defines no function and leaves only private globals (__monty_json,
// __monty_view_*), the values cleared, so a save adds nothing to the
// session but the code's text.
func (t viewTarget) values(ctx context.Context, names []string) ([]viewMember, error) {
	var code strings.Builder
	code.WriteString("import json as __monty_json\n__monty_view_values = (")
	for _, n := range names {
		if !isIdentifier(n) {
			return nil, fmt.Errorf("session: reading globals: the global name %q is not an identifier", n)
		}
		code.WriteString(n)
		code.WriteString(", ")
	}
	code.WriteString(")\n")
	code.WriteString(`__monty_view_out = []
for __monty_view_v in __monty_view_values:
    try:
        __monty_view_out.append(__monty_json.dumps(__monty_view_v, allow_nan=False))
    except Exception:
        __monty_view_out.append(None)
__monty_view_values = __monty_view_v = None
__monty_view_out`)
	v, err := t.repl.Run(ctx, code.String())
	if err != nil {
		return nil, err
	}
	got, ok := v.(object.List)
	if !ok || len(got) != len(names) {
		return nil, fmt.Errorf("session: reading globals: unexpected %s", object.Repr(v))
	}
	out := make([]viewMember, len(names))
	for i, m := range got {
		text, ok := m.(object.Str)
		if !ok {
			continue
		}
		if !json.Valid([]byte(text)) {
			return nil, errors.New("session: reading globals: json.dumps gave text that is not JSON")
		}
		out[i].text = member(names[i], []byte(text))
	}
	return out, nil
}

// isIdentifier reports whether name is a Python identifier (letters,
// digits and underscores, not starting with a digit), safe to write into
// code.
func isIdentifier(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}
