package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Violation is one broken promise found in a session's history.
type Violation struct {
	// Kind is "lost_ack", "duplicate", "refused_but_applied",
	// "not_linearizable", "final_read_failed" or "check_timed_out".
	Kind    string
	Session string
	Detail  string
}

// String is the violation as one line of a report.
func (v Violation) String() string {
	return fmt.Sprintf("%s: session %s: %s", v.Kind, v.Session, v.Detail)
}

// CheckResult is the checker's verdict on a set of session histories.
type CheckResult struct {
	Violations []Violation
	// Expected are the violations of sessions marked LossExpected: what a
	// data-destroying fault did, reported apart.
	Expected []Violation
	// Sessions, Acked, Unknown, Applied count what was checked: sessions,
	// acknowledged appends, appends whose outcome the client never learnt,
	// and of those the ones found applied in the final state.
	Sessions, Acked, Unknown, UnknownApplied int
}

// linearizeTimeout bounds Porcupine's search per session.
var linearizeTimeout = 20 * time.Second

// Check checks each session's history: every acknowledged append is in
// the final list exactly once, no value is ever in a list twice (a retry
// applied at most once), an append the server refused is in no list, and
// the history is linearizable for a list whose appends return the whole
// list.
func Check(histories []SessionHistory) CheckResult {
	var res CheckResult
	for _, h := range histories {
		res.Sessions++
		var vs []Violation
		final, ok := finalList(h)
		if !ok {
			vs = append(vs, Violation{"final_read_failed", h.ID, "the final read of the session got no list"})
		}
		// Every list a client saw, and the final one: no value twice.
		seen := map[string]bool{} // values in any list
		dupReported := map[string]bool{}
		lists := [][]string{}
		for _, op := range h.Ops {
			if op.Outcome == Acked {
				lists = append(lists, op.List)
			}
		}
		for _, l := range lists {
			count := map[string]int{}
			for _, v := range l {
				count[v]++
				seen[v] = true
				if count[v] == 2 && !dupReported[v] {
					dupReported[v] = true
					vs = append(vs, Violation{"duplicate", h.ID, fmt.Sprintf("value %s is in the list twice (%s)", v, describeAppend(h, v))})
				}
			}
		}
		inFinal := map[string]bool{}
		for _, v := range final {
			inFinal[v] = true
		}
		for _, op := range h.Ops {
			if op.Kind != Append {
				continue
			}
			switch op.Outcome {
			case Acked:
				res.Acked++
				if ok && !inFinal[op.Value] {
					vs = append(vs, Violation{"lost_ack", h.ID, fmt.Sprintf("acknowledged append of %s (answered at %s) is not in the final list", op.Value, op.Return.Format("15:04:05.000"))})
				}
			case Unknown:
				res.Unknown++
				if seen[op.Value] {
					res.UnknownApplied++
				}
			case Refused:
				if seen[op.Value] {
					vs = append(vs, Violation{"refused_but_applied", h.ID, fmt.Sprintf("append of %s was answered as not done (%s) yet its value is in a list", op.Value, lastClass(op))})
				}
			}
		}
		if ok {
			if v, bad := linearizable(h, seen); bad {
				vs = append(vs, v)
			}
		}
		if h.LossExpected {
			res.Expected = append(res.Expected, vs...)
		} else {
			res.Violations = append(res.Violations, vs...)
		}
	}
	return res
}

// finalList is the list the session's final read returned.
func finalList(h SessionHistory) ([]string, bool) {
	for i := len(h.Ops) - 1; i >= 0; i-- {
		op := h.Ops[i]
		if op.Kind == Read {
			return op.List, op.Outcome == Acked
		}
	}
	return nil, false
}

func describeAppend(h SessionHistory, v string) string {
	for _, op := range h.Ops {
		if op.Kind == Append && op.Value == v {
			return fmt.Sprintf("its append was %s after %d attempt(s): %s", op.Outcome, len(op.Attempts), attemptClasses(op))
		}
	}
	return "appended by no recorded request"
}

func attemptClasses(op Op) string {
	var parts []string
	for _, a := range op.Attempts {
		s := fmt.Sprintf("instance %d: %s", a.Instance, a.Class)
		if a.Replayed {
			s += " (replayed)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func lastClass(op Op) string {
	if len(op.Attempts) == 0 {
		return "no attempt"
	}
	return op.Attempts[len(op.Attempts)-1].Class
}

// listInput is a Porcupine input: append Value, or read when Read.
type listInput struct {
	Read  bool
	Value string
}

// listOutput is a Porcupine output: the list returned, or Unknown when the
// client never learnt it.
type listOutput struct {
	Unknown bool
	List    string
}

// listModel is a list of strings (its state is the values joined by "\x00")
// whose append returns the whole list after the append.
var listModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(string), input.(listInput), output.(listOutput)
		if in.Read {
			return out.Unknown || out.List == s, s
		}
		next := in.Value
		if s != "" {
			next = s + "\x00" + in.Value
		}
		return out.Unknown || out.List == next, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(listInput), output.(listOutput)
		res := "?"
		if !out.Unknown {
			res = "[" + strings.ReplaceAll(out.List, "\x00", ",") + "]"
		}
		if in.Read {
			return "read() -> " + res
		}
		return "append(" + in.Value + ") -> " + res
	},
}

// linearizable runs Porcupine over the session's history. Appends whose
// outcome is unknown take part, with an unknown answer and no end, only
// when their value is in some list (values are unique, so an unknown
// append whose value is in no list never happened); refused appends never
// take part (their presence is reported on its own).
func linearizable(h SessionHistory, seen map[string]bool) (Violation, bool) {
	if len(h.Ops) == 0 {
		return Violation{}, false
	}
	t0 := h.Ops[0].Call
	for _, op := range h.Ops {
		if op.Call.Before(t0) {
			t0 = op.Call
		}
	}
	var ops []porcupine.Operation
	for _, op := range h.Ops {
		in := listInput{Read: op.Kind == Read, Value: op.Value}
		call := int64(op.Call.Sub(t0))
		switch {
		case op.Outcome == Acked:
			ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: in, Call: call, Output: listOutput{List: strings.Join(op.List, "\x00")}, Return: int64(op.Return.Sub(t0))})
		case op.Kind == Append && op.Outcome == Unknown && seen[op.Value]:
			ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: in, Call: call, Output: listOutput{Unknown: true}, Return: math.MaxInt64})
		}
	}
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return compareInt64(a.Call, b.Call) })
	switch porcupine.CheckOperationsTimeout(listModel, ops, linearizeTimeout) {
	case porcupine.Illegal:
		return Violation{"not_linearizable", h.ID, fmt.Sprintf("no order of its %d operations explains the lists the clients saw: %s", len(ops), describeOps(h))}, true
	case porcupine.Unknown:
		return Violation{"check_timed_out", h.ID, fmt.Sprintf("the linearizability check did not finish in %s", linearizeTimeout)}, true
	}
	return Violation{}, false
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// describeOps prints a short history for a report (at most 12 operations,
// values without the session id).
func describeOps(h SessionHistory) string {
	var parts []string
	for i, op := range h.Ops {
		if i == 12 {
			parts = append(parts, fmt.Sprintf("… %d more", len(h.Ops)-12))
			break
		}
		short := func(v string) string { return strings.TrimPrefix(v, h.ID+".") }
		what := "append(" + short(op.Value) + ")"
		if op.Kind == Read {
			what = "read()"
		}
		var list []string
		for _, v := range op.List {
			list = append(list, short(v))
		}
		parts = append(parts, fmt.Sprintf("client %d %s -> %s [%s]", op.Client, what, op.Outcome, strings.Join(list, ",")))
	}
	return strings.Join(parts, "; ")
}
