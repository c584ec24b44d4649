// Package aguitest checks AG-UI events against the protocol: each event's
// JSON against the shape the AG-UI core event schemas give its type, and
// a stream of events against the protocol's ordering rules. It is for
// tests of code that emits AG-UI events (package agui, the HTTP API's
// event streams).
//
// The shapes are written out here, from the protocol's documentation,
// rather than derived from package agui's structs, so that a change to
// those structs that leaves the protocol is caught. They are stricter
// than the protocol in one way: the protocol lets events carry fields it
// does not name, but a field not in the table is reported here, so a
// misspelt name ("toolCallID", "thread_id") cannot slip through.
package aguitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// kind is the JSON type a field must have.
type kind int

const (
	str    kind = iota // a string
	nonEmp             // a non-empty string
	num                // a number
	obj                // an object
	anyVal             // any JSON value
)

func (k kind) String() string {
	return [...]string{"a string", "a non-empty string", "a number", "an object", "any value"}[k]
}

// field is one property of an event's shape.
type field struct {
	kind     kind
	required bool
	oneOf    []string // allowed values of a string field, when not empty
}

func req(k kind) field { return field{kind: k, required: true} }
func opt(k kind) field { return field{kind: k} }

// roles are the roles of a text message.
var roles = []string{"developer", "system", "assistant", "user"}

// base are the fields every event has.
var base = map[string]field{
	"type":      req(str),
	"timestamp": opt(num),
	"rawEvent":  opt(anyVal),
}

// shapes are the AG-UI core event types this project emits, with their
// fields beyond the base ones (type, timestamp, rawEvent).
var shapes = map[string]map[string]field{
	"RUN_STARTED": {
		"threadId": req(str), "runId": req(str), "protocolVersion": req(str),
		"parentRunId": opt(str), "input": opt(obj),
	},
	"RUN_FINISHED": {
		"threadId": req(str), "runId": req(str), "result": opt(anyVal), "outcome": opt(obj),
	},
	"RUN_ERROR": {
		"message": req(str), "code": opt(str),
	},
	"CUSTOM":        {"name": req(str), "value": req(anyVal)},
	"STEP_STARTED":  {"stepName": req(str)},
	"STEP_FINISHED": {"stepName": req(str)},
	"TEXT_MESSAGE_START": {
		"messageId": req(str), "role": {kind: str, oneOf: roles},
	},
	"TEXT_MESSAGE_CONTENT": {"messageId": req(str), "delta": req(nonEmp)},
	"TEXT_MESSAGE_END":     {"messageId": req(str)},
	"TOOL_CALL_START": {
		"toolCallId": req(str), "toolCallName": req(str), "parentMessageId": opt(str),
	},
	"TOOL_CALL_ARGS": {"toolCallId": req(str), "delta": req(str)},
	"TOOL_CALL_END":  {"toolCallId": req(str)},
	"TOOL_CALL_RESULT": {
		"messageId": req(str), "toolCallId": req(str), "content": req(str),
		"role": {kind: str, oneOf: []string{"tool"}},
	},
}

// Types returns the event types Check knows, sorted.
func Types() []string {
	out := make([]string, 0, len(shapes))
	for t := range shapes {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

var camel = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// Check validates one event's JSON: an object whose "type" is one of
// Types, with every field its shape requires, each of the right JSON
// type, and no field the shape does not name. It returns the event's
// fields.
func Check(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil {
		return nil, fmt.Errorf("aguitest: not a JSON object: %w: %s", err, data)
	}
	typ, ok := ev["type"].(string)
	if !ok {
		return nil, fmt.Errorf("aguitest: \"type\" is missing or not a string: %s", data)
	}
	shape, ok := shapes[typ]
	if !ok {
		return nil, fmt.Errorf("aguitest: type %q is not an AG-UI event type this project emits (%s): %s", typ, strings.Join(Types(), ", "), data)
	}
	var problems []string
	for name := range ev {
		if !camel.MatchString(name) {
			problems = append(problems, fmt.Sprintf("field %q is not camelCase", name))
		}
	}
	fields := maps.Clone(base)
	maps.Copy(fields, shape)
	problems = append(problems, checkFields(typ, ev, fields)...)
	if outcome, ok := ev["outcome"].(map[string]any); ok {
		problems = append(problems, checkOutcome(outcome)...)
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return ev, fmt.Errorf("aguitest: %s event does not fit the protocol: %s: %s", typ, strings.Join(problems, "; "), data)
	}
	return ev, nil
}

// outcomes are the shapes of RUN_FINISHED's outcome by its type (AG-UI
// 1.0), and interrupt the shape of one of an interrupt outcome's
// interrupts.
var (
	outcomes = map[string]map[string]field{
		"success":   {"type": req(str), "pendingToolCallIds": opt(anyVal)},
		"interrupt": {"type": req(str), "interrupts": req(anyVal)},
		"cancelled": {"type": req(str)},
	}
	interrupt = map[string]field{
		"id": req(nonEmp), "reason": req(str), "message": opt(str), "toolCallId": opt(str),
		"responseSchema": opt(obj), "expiresAt": opt(str), "metadata": opt(obj), "subagentRunId": opt(str),
	}
)

// checkOutcome returns what is wrong with a RUN_FINISHED outcome: its
// type, its fields, and for an interrupt outcome a non-empty list of
// interrupts of the right shape with distinct ids.
func checkOutcome(outcome map[string]any) []string {
	typ, _ := outcome["type"].(string)
	shape, ok := outcomes[typ]
	if !ok {
		return []string{fmt.Sprintf("outcome type %q is not one of %q", typ, slices.Sorted(maps.Keys(outcomes)))}
	}
	problems := checkFields("outcome", outcome, shape)
	if typ != "interrupt" {
		return problems
	}
	list, _ := outcome["interrupts"].([]any)
	if len(list) == 0 {
		return append(problems, "an interrupt outcome needs at least one interrupt")
	}
	ids := map[string]bool{}
	for i, v := range list {
		in, ok := v.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("interrupt %d is not an object", i))
			continue
		}
		problems = append(problems, checkFields(fmt.Sprintf("interrupt %d", i), in, interrupt)...)
		if id, _ := in["id"].(string); ids[id] {
			problems = append(problems, fmt.Sprintf("interrupt id %q is repeated", id))
		} else {
			ids[id] = true
		}
	}
	return problems
}

// checkFields returns what is wrong with obj (an event, or an object in
// one; what names it) against shape: fields missing, unknown, or of the
// wrong type.
func checkFields(what string, obj map[string]any, shape map[string]field) []string {
	var problems []string
	for name, v := range obj {
		f, ok := shape[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("field %q is not part of %s", name, what))
		} else if msg := f.check(v); msg != "" {
			problems = append(problems, fmt.Sprintf("%s: field %q %s", what, name, msg))
		}
	}
	for name, f := range shape {
		if _, ok := obj[name]; f.required && !ok {
			problems = append(problems, fmt.Sprintf("%s: required field %q is missing", what, name))
		}
	}
	return problems
}

// check returns what is wrong with v, or "".
func (f field) check(v any) string {
	ok := false
	switch f.kind {
	case str, nonEmp:
		s, isStr := v.(string)
		ok = isStr && (f.kind == str || s != "")
		if ok && len(f.oneOf) > 0 && !slices.Contains(f.oneOf, s) {
			return fmt.Sprintf("is %q, not one of %q", s, f.oneOf)
		}
	case num:
		_, ok = v.(json.Number)
	case obj:
		_, ok = v.(map[string]any)
	case anyVal:
		ok = true
	}
	if !ok {
		return fmt.Sprintf("must be %s, not %v", f.kind, v)
	}
	return ""
}

// Stream checks a sequence of events, one run's: each event with Check,
// and the order the protocol requires. The run starts with RUN_STARTED
// (or fails at once with RUN_ERROR); text messages, tool calls and steps
// start before their other events, under an id not already active; a
// tool call's result follows its start; RUN_FINISHED repeats RUN_STARTED's
// threadId and runId and comes when no message, tool call or step is
// active, and its interrupts name tool calls the run started; nothing
// follows RUN_FINISHED or RUN_ERROR. A Stream is not safe for concurrent
// use.
type Stream struct {
	started, ended     bool
	threadID, runID    string
	messages, steps    map[string]bool
	toolCalls, results map[string]bool // active calls; calls ever started
	// Events are the events added so far, decoded.
	Events []map[string]any
}

// Add checks the next event of the stream and returns its fields.
func (s *Stream) Add(data []byte) (map[string]any, error) {
	ev, err := Check(data)
	if err != nil {
		return nil, err
	}
	s.Events = append(s.Events, ev)
	if err := s.order(ev); err != nil {
		return ev, fmt.Errorf("aguitest: event %d (%s) is out of order: %w: %s", len(s.Events), ev["type"], err, data)
	}
	return ev, nil
}

func (s *Stream) order(ev map[string]any) error {
	if s.messages == nil {
		s.messages, s.steps, s.toolCalls, s.results = map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	typ := ev["type"].(string)
	str := func(name string) string { v, _ := ev[name].(string); return v }
	switch {
	case s.ended:
		return fmt.Errorf("the run has already ended")
	case !s.started && typ != "RUN_STARTED" && typ != "RUN_ERROR":
		return fmt.Errorf("the first event must be RUN_STARTED (or RUN_ERROR)")
	}
	// begin marks id active in set, end makes it inactive.
	begin := func(set map[string]bool, what, id string) error {
		if set[id] {
			return fmt.Errorf("%s %q is already active", what, id)
		}
		set[id] = true
		return nil
	}
	active := func(set map[string]bool, what, id string) error {
		if !set[id] {
			return fmt.Errorf("no active %s %q", what, id)
		}
		return nil
	}
	end := func(set map[string]bool, what, id string) error {
		if err := active(set, what, id); err != nil {
			return err
		}
		delete(set, id)
		return nil
	}
	switch typ {
	case "RUN_STARTED":
		if s.started {
			return fmt.Errorf("the run has already started")
		}
		s.started, s.threadID, s.runID = true, str("threadId"), str("runId")
	case "RUN_FINISHED":
		if str("threadId") != s.threadID || str("runId") != s.runID {
			return fmt.Errorf("threadId/runId %q/%q differ from RUN_STARTED's %q/%q", str("threadId"), str("runId"), s.threadID, s.runID)
		}
		for what, set := range map[string]map[string]bool{"text messages": s.messages, "tool calls": s.toolCalls, "steps": s.steps} {
			if len(set) > 0 {
				return fmt.Errorf("%s still active: %v", what, slices.Sorted(maps.Keys(set)))
			}
		}
		if err := s.interrupts(ev); err != nil {
			return err
		}
		s.ended = true
	case "RUN_ERROR":
		s.ended = true
	case "STEP_STARTED":
		return begin(s.steps, "step", str("stepName"))
	case "STEP_FINISHED":
		return end(s.steps, "step", str("stepName"))
	case "TEXT_MESSAGE_START":
		return begin(s.messages, "text message", str("messageId"))
	case "TEXT_MESSAGE_CONTENT":
		return active(s.messages, "text message", str("messageId"))
	case "TEXT_MESSAGE_END":
		return end(s.messages, "text message", str("messageId"))
	case "TOOL_CALL_START":
		s.results[str("toolCallId")] = true
		return begin(s.toolCalls, "tool call", str("toolCallId"))
	case "TOOL_CALL_ARGS":
		return active(s.toolCalls, "tool call", str("toolCallId"))
	case "TOOL_CALL_END":
		return end(s.toolCalls, "tool call", str("toolCallId"))
	case "TOOL_CALL_RESULT":
		if !s.results[str("toolCallId")] {
			return fmt.Errorf("result of tool call %q, which never started", str("toolCallId"))
		}
	}
	return nil
}

// interrupts checks that the interrupts of a RUN_FINISHED event name only
// tool calls the stream started.
func (s *Stream) interrupts(ev map[string]any) error {
	outcome, _ := ev["outcome"].(map[string]any)
	list, _ := outcome["interrupts"].([]any)
	for _, v := range list {
		in, _ := v.(map[string]any)
		if id, ok := in["toolCallId"].(string); ok && !s.results[id] {
			return fmt.Errorf("interrupt %v names tool call %q, which never started", in["id"], id)
		}
	}
	return nil
}

// End reports whether the stream ended as a run must: with RUN_FINISHED
// or RUN_ERROR.
func (s *Stream) End() error {
	if !s.ended {
		return fmt.Errorf("aguitest: the stream ended after %d events without RUN_FINISHED or RUN_ERROR", len(s.Events))
	}
	return nil
}
