package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/tools"
)

// EventType says what an Event reports.
type EventType string

// Event types: the twelve kinds of seed 002's bridge, and progress. A run's stream
// starts with RunStarted and ends with RunFinished or RunError. In
// between, print output forms text messages (TextStart, TextContent...,
// TextEnd; a message ends when a host call starts, when output switches
// between stdout and stderr, and before the run ends), and every host
// function call is a step: StepStarted, then ToolCallStart, ToolCallArgs
// and ToolCallEnd together when the call is made, then ToolCallResult and
// StepFinished when it returns. Async calls may overlap, so their results
// can come in any order; a call still running when the run ends (never
// awaited) gets its StepFinished, without a result, before the run's last
// event, so every step that starts also finishes. A call that reports how
// far it got (an MCP tool's progress notifications) adds ToolCallProgress
// events between its ToolCallEnd and its ToolCallResult, and one whose
// server logs a message meanwhile ToolCallLog events. A resume that
// answers calls waiting for a person's approval reports each decision as
// an ApprovalDecision event, once its outcome is known (after the
// approved call's own step).
const (
	RunStarted     EventType = "run_started"
	RunFinished    EventType = "run_finished"
	RunError       EventType = "run_error"
	StepStarted    EventType = "step_started"
	StepFinished   EventType = "step_finished"
	TextStart      EventType = "text_start"
	TextContent    EventType = "text_content"
	TextEnd        EventType = "text_end"
	ToolCallStart  EventType = "tool_call_start"
	ToolCallArgs   EventType = "tool_call_args"
	ToolCallEnd    EventType = "tool_call_end"
	ToolCallResult EventType = "tool_call_result"
	// ToolCallProgress: a host call under way reports its progress
	// (Progress, Total, Delta for its message).
	ToolCallProgress EventType = "tool_call_progress"
	// ToolCallLog: the server of a call under way (an MCP server) logged
	// a message (Level, Delta: the message as text).
	ToolCallLog EventType = "tool_call_log"
	// ApprovalDecision: a decision on a call that waited for a person's
	// approval was carried out (Decision: who, what, the outcome).
	ApprovalDecision EventType = "approval_decision"
)

// Event is one step of a run, in a protocol-neutral form (package agui
// maps events to AG-UI). Which fields are set depends on Type.
type Event struct {
	Type EventType
	// Seq numbers the run's events from 1, in the order they happened.
	Seq int
	// RunID identifies the run; every event of a run carries it.
	RunID string
	// Time is when the event happened.
	Time time.Time
	// MessageID identifies a text message (Text* events).
	MessageID string
	// Stream is where the text of a message was printed (TextStart).
	Stream runtime.Stream
	// StepName names a step (Step* events): the ToolCallID of the host
	// call whose execution it spans.
	StepName string
	// ToolCallID identifies a host call (ToolCall* and Step* events),
	// unique within the run.
	ToolCallID string
	// ToolName is the host function called (ToolCallStart and Step*).
	ToolName string
	// Delta is printed text (TextContent, never empty) or the call's
	// arguments as a JSON object (ToolCallArgs).
	Delta string
	// Result is the call's outcome (ToolCallResult): the returned value as
	// JSON when JSON can carry it, else its repr; or "Type: message" when
	// the call raised, with IsError set.
	Result  string
	IsError bool
	// Progress is how far a call got (ToolCallProgress), out of Total
	// when Total is not 0; Delta then holds the call's message, if any.
	Progress, Total float64
	// Level is a log message's severity (ToolCallLog): debug, info,
	// notice, warning, error, critical, alert or emergency.
	Level string
	// Value is the value of the code's final expression (RunFinished) or
	// the value a host call returned (ToolCallResult).
	Value object.Value
	// Decision is the decision an ApprovalDecision reports (ToolName is
	// then its tool).
	Decision *session.Decision
	// Err is why the run failed (RunError): a *runtime.Error for a Python
	// exception (including limits), or an error matching ErrTimeout,
	// runtime.ErrHostCallLimit, runtime.ErrCancelled, ...
	Err error
}

// recorder turns one run's output and host calls into events. It is
// safe for concurrent use: async host calls report from their goroutines.
type recorder struct {
	mu     sync.Mutex
	runID  string
	sink   func(Event)
	seq    int
	msgs   int
	calls  int
	open   string // id of the open text message, if any
	stream runtime.Stream
	steps  []step // host calls still running, in the order they started
	out    strings.Builder
	// text is the print output with a line for each host call's result,
	// in order: the seed's text result (unless ExecutorOptions.OmitCallResults).
	text strings.Builder
	done bool // finished: later events (an async call the run left behind) are dropped
}

// step is a host call whose result has not come yet.
type step struct{ id, name string }

// maxCallText bounds the result a call line of the text result shows.
const maxCallText = 2048

// emit delivers an event; callers hold mu. After the run's last event
// nothing more is delivered: the stream always ends with RunFinished or
// RunError, and the sink is never called after the run returned.
func (r *recorder) emit(e Event) {
	if r.done {
		return
	}
	r.seq++
	e.Seq, e.RunID, e.Time = r.seq, r.runID, time.Now()
	if r.sink != nil {
		r.sink(e)
	}
}

// endText closes the open text message; callers hold mu.
func (r *recorder) endText() {
	if r.open != "" {
		r.emit(Event{Type: TextEnd, MessageID: r.open})
		r.open = ""
	}
}

// Print records output, opening a text message if none is open.
func (r *recorder) Print(stream runtime.Stream, text string) {
	if text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.WriteString(text)
	r.text.WriteString(text)
	if r.open != "" && r.stream != stream {
		r.endText()
	}
	if r.open == "" {
		r.msgs++
		r.open, r.stream = r.runID+"-msg-"+strconv.Itoa(r.msgs), stream
		r.emit(Event{Type: TextStart, MessageID: r.open, Stream: stream})
	}
	r.emit(Event{Type: TextContent, MessageID: r.open, Delta: text})
}

// CallStarted reports the start of a host call, and of the step its
// execution is, and returns its id.
func (r *recorder) CallStarted(name, args string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endText()
	r.calls++
	id := r.runID + "-call-" + strconv.Itoa(r.calls)
	if !r.done {
		r.steps = append(r.steps, step{id, name})
	}
	r.emit(Event{Type: StepStarted, StepName: id, ToolCallID: id, ToolName: name})
	r.emit(Event{Type: ToolCallStart, ToolCallID: id, ToolName: name})
	r.emit(Event{Type: ToolCallArgs, ToolCallID: id, Delta: args})
	r.emit(Event{Type: ToolCallEnd, ToolCallID: id})
	return id
}

// CallProgress reports the progress of host call id, still under way.
func (r *recorder) CallProgress(id string, progress, total float64, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || !slices.ContainsFunc(r.steps, func(s step) bool { return s.id == id }) {
		return // the call returned, or the run ended
	}
	r.emit(Event{Type: ToolCallProgress, ToolCallID: id, Progress: progress, Total: total, Delta: message})
}

// recorderKey carries a run's recorder, for the decisions on approval
// calls made under it (report).
type recorderKey struct{}

// decision reports decision d.
func (r *recorder) decision(d *session.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endText()
	dc := *d
	r.emit(Event{Type: ApprovalDecision, ToolName: d.Tool, Decision: &dc})
}

// CallLog reports a message the server of host call id logged while the
// call was under way.
func (r *recorder) CallLog(id, level, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || !slices.ContainsFunc(r.steps, func(s step) bool { return s.id == id }) {
		return
	}
	r.emit(Event{Type: ToolCallLog, ToolCallID: id, Level: level, Delta: message})
}

// CallFinished reports the outcome of a host call.
func (r *recorder) CallFinished(id string, v object.Value, err error) {
	e := Event{Type: ToolCallResult, ToolCallID: id, Value: v}
	if err != nil {
		e.IsError = true
		var exc *runtime.Exception
		if errors.As(err, &exc) {
			e.Result = exc.Error()
		} else {
			e.Result = "RuntimeError: " + err.Error()
		}
	} else {
		e.Result = string(tools.ValueJSON(v))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.steps, func(s step) bool { return s.id == id })
	if r.done || i < 0 {
		return // the run ended before the call returned
	}
	name := r.steps[i].name
	r.steps = slices.Delete(r.steps, i, i+1)
	r.emit(e)
	r.emit(Event{Type: StepFinished, StepName: id, ToolCallID: id, ToolName: name})
	r.callLine(name, e)
}

// callLine adds a host call's result to the text result, on a line of
// its own: "[name returned <result>]" or "[name raised <Type: message>]";
// callers hold mu.
func (r *recorder) callLine(name string, e Event) {
	if t := r.text.String(); t != "" && !strings.HasSuffix(t, "\n") {
		r.text.WriteByte('\n')
	}
	verb := " returned "
	if e.IsError {
		verb = " raised "
	}
	res := e.Result
	if len(res) > maxCallText {
		cut := maxCallText
		for cut > 0 && !utf8.RuneStart(res[cut]) {
			cut--
		}
		res = fmt.Sprintf("%s… (%d more bytes)", res[:cut], len(res)-cut)
	}
	r.text.WriteString("[" + name + verb + res + "]\n")
}

// finish closes the stream: the open text message, the steps of calls
// still running, then RunFinished or RunError.
func (r *recorder) finish(v object.Value, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endText()
	for _, s := range r.steps {
		r.emit(Event{Type: StepFinished, StepName: s.id, ToolCallID: s.id, ToolName: s.name})
	}
	r.steps = nil
	if err != nil {
		r.emit(Event{Type: RunError, Err: err})
	} else {
		r.emit(Event{Type: RunFinished, Value: v})
	}
	r.done = true
}

func (r *recorder) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// transcript is the print output with a line for each host call's
// result, in the order they happened.
func (r *recorder) transcript() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String()
}

// NewRunID returns a random run id ("run-" and 16 hex digits).
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

// Run runs code in s and reports the run to sink as events, in order,
// while it happens (sink may be nil). runID names the run; empty means
// NewRunID(). Tool-call events come from host functions of a Registry's
// Host, which s must have been opened with (session.Options.Host); other
// host functions run without events.
//
// Run returns what s.Exec returns, with Result.Output holding the print
// output (which the events carry as it happens). The run ends with
// RunError when the code raised (Result.Err) or Exec failed (the error).
//
// sink is called from the goroutine running the code and, for async host
// functions, from theirs, but never concurrently; it must not block for
// long, since the run waits for it.
func Run(ctx context.Context, s *session.Session, runID, code string, sink func(Event)) (*session.Result, error) {
	rec, res, err := run(ctx, s, runID, code, nil, sink)
	switch {
	case err != nil:
		rec.finish(nil, err)
		return res, fmt.Errorf("agent: run %s: %w", rec.runID, err)
	case res.Err != nil:
		rec.finish(nil, res.Err)
	default:
		rec.finish(res.Value, nil)
	}
	return res, nil
}

// start begins a run's event stream (RunStarted) and returns the context
// whose print output and host calls it reports.
func start(ctx context.Context, runID string, sink func(Event)) (*recorder, context.Context) {
	if runID == "" {
		runID = NewRunID()
	}
	rec := &recorder{runID: runID, sink: sink}
	rec.mu.Lock()
	rec.emit(Event{Type: RunStarted})
	rec.mu.Unlock()
	ctx = context.WithValue(tools.WithObserver(ctx, rec), recorderKey{}, rec)
	return rec, runtime.WithPrintFunc(ctx, rec.Print)
}

// Recorder reports a run that its caller drives to an event sink, for
// runs Run cannot make (code with inputs, session.ExecOptions, a paused
// execution resumed later): NewRecorder emits RunStarted, the print
// output and the calls of a Registry's host functions made under the
// context it returns become events, and Finish ends the stream. The sink
// is called as for Run. A Recorder is safe for concurrent use.
type Recorder struct{ rec *recorder }

// NewRecorder starts the event stream of run runID (empty means
// NewRunID()) by calling sink with RunStarted, and returns the recorder
// and the context to run the code with. Print output under that context
// goes to the events only (not to the session's Options.Print):
// Recorder.Output has it.
func NewRecorder(ctx context.Context, runID string, sink func(Event)) (*Recorder, context.Context) {
	rec, ctx := start(ctx, runID, sink)
	return &Recorder{rec}, ctx
}

// RunID returns the run's id.
func (r *Recorder) RunID() string { return r.rec.runID }

// Finish ends the stream: it closes the open text message and the steps
// of host calls still running, then reports RunFinished with v, or
// RunError when err is not nil (pass an untyped nil on success, not a nil
// *runtime.Error). Events after the first Finish, such as the result of
// an async call the run left behind, are dropped.
func (r *Recorder) Finish(v object.Value, err error) { r.rec.finish(v, err) }

// Output returns the print output so far, both streams in order.
func (r *Recorder) Output() string { return r.rec.output() }

// ToolCall reports a call that is not a Registry host function's, such as
// a client tool the run stopped at, as host calls are reported: it closes
// the open text message and emits StepStarted, ToolCallStart, ToolCallArgs
// (args: the arguments as a JSON object) and ToolCallEnd. It returns the
// call's id, for ToolResult. A call without a result when the run
// finishes gets its StepFinished then.
func (r *Recorder) ToolCall(name, args string) string { return r.rec.CallStarted(name, args) }

// ToolResult reports the outcome of a call ToolCall reported: its value,
// or the error it raised (a *runtime.Exception gives the Python type).
func (r *Recorder) ToolResult(id string, v object.Value, err error) { r.rec.CallFinished(id, v, err) }

// run starts the event stream and runs the code, type-checked first with
// tc when it is set (else as the session's options say); the caller
// finishes the stream.
func run(ctx context.Context, s *session.Session, runID, code string, tc *session.TypeCheck, sink func(Event)) (*recorder, *session.Result, error) {
	return runOp(ctx, s, runID, func(ctx context.Context, s *session.Session) (*session.Result, error) {
		if tc != nil {
			return s.ExecOptions(ctx, code, session.ExecOptions{TypeCheck: tc})
		}
		return s.Exec(ctx, code)
	}, sink)
}

// sessionOp is what a run does with its session: run code, or resume a
// paused run.
type sessionOp func(ctx context.Context, s *session.Session) (*session.Result, error)

// runOp does op under a recorder of the run's events.
func runOp(ctx context.Context, s *session.Session, runID string, op sessionOp, sink func(Event)) (*recorder, *session.Result, error) {
	rec, ctx := start(ctx, runID, sink)
	res, err := op(ctx, s)
	if res == nil {
		res = &session.Result{}
	}
	res.Output = rec.output()
	return rec, res, err
}
