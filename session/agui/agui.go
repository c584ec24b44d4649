// Package agui maps the protocol-neutral events of package agent onto
// AG-UI (Agent-User Interaction protocol) events, one to one (the twelve
// kinds of seed 002's bridge, and a tool call's progress), so a run of
// Python code can be streamed to an AG-UI frontend.
//
//	agent.RunStarted     → RUN_STARTED          (threadId, runId injected)
//	agent.RunFinished    → RUN_FINISHED         (result: the final value as JSON; no outcome: success)
//	agent.RunError       → RUN_ERROR            (message; code: the Python exception type)
//	agent.StepStarted    → STEP_STARTED         (stepName: the host call's toolCallId)
//	agent.StepFinished   → STEP_FINISHED        (stepName: the host call's toolCallId)
//	agent.TextStart      → TEXT_MESSAGE_START   (role "assistant")
//	agent.TextContent    → TEXT_MESSAGE_CONTENT
//	agent.TextEnd        → TEXT_MESSAGE_END
//	agent.ToolCallStart  → TOOL_CALL_START      (parentMessageId injected when set)
//	agent.ToolCallArgs   → TOOL_CALL_ARGS       (delta: the arguments as JSON)
//	agent.ToolCallEnd    → TOOL_CALL_END
//	agent.ToolCallResult → TOOL_CALL_RESULT     (messageId: toolCallId + "-result", role "tool")
//	agent.ToolCallProgress → CUSTOM             (name "tool_call_progress"; value: toolCallId, progress, total, message)
//	agent.ToolCallLog    → CUSTOM               (name "tool_call_log"; value: toolCallId, level, message)
//
// The events are Go structs whose JSON is the protocol's wire form
// (camelCase fields, a "type" discriminator, an optional millisecond
// "timestamp"). The package writes them itself rather than using the
// community Go SDK (github.com/ag-ui-protocol/ag-ui/sdks/community/go):
// that module has no tagged release and pulls in logrus, while the shapes
// needed here are a dozen small structs. Output on stderr has no separate
// notion in AG-UI; it becomes an assistant text message like stdout.
package agui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/tools"
)

// EventType is the AG-UI "type" discriminator.
type EventType string

// The AG-UI event types this package emits.
const (
	RunStartedType         EventType = "RUN_STARTED"
	RunFinishedType        EventType = "RUN_FINISHED"
	RunErrorType           EventType = "RUN_ERROR"
	StepStartedType        EventType = "STEP_STARTED"
	StepFinishedType       EventType = "STEP_FINISHED"
	TextMessageStartType   EventType = "TEXT_MESSAGE_START"
	TextMessageContentType EventType = "TEXT_MESSAGE_CONTENT"
	TextMessageEndType     EventType = "TEXT_MESSAGE_END"
	ToolCallStartType      EventType = "TOOL_CALL_START"
	ToolCallArgsType       EventType = "TOOL_CALL_ARGS"
	ToolCallEndType        EventType = "TOOL_CALL_END"
	ToolCallResultType     EventType = "TOOL_CALL_RESULT"
	CustomType             EventType = "CUSTOM"
)

// ToolCallProgressName is the name of the CUSTOM events that carry a tool
// call's progress (agent.ToolCallProgress): their value is
// {"toolCallId", "progress", "total"?, "message"?}.
const ToolCallProgressName = "tool_call_progress"

// CustomEvent is CUSTOM: an application's own event, here a tool call's
// progress (ToolCallProgressName).
type CustomEvent struct {
	Base
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// ToolCallLogName is the name of the CUSTOM events that carry a message
// the server of a tool call logged (agent.ToolCallLog): their value is
// {"toolCallId", "level", "message"}.
const ToolCallLogName = "tool_call_log"

// ApprovalDecisionName is the name of the CUSTOM events that report a
// decision on a call that waited for a person's approval
// (agent.ApprovalDecision): their value is the session.Decision, as JSON
// ({"time", "who", "run_id", "call_id", "tool", "args",
// "idempotency_key", "approved", "outcome", "exception"?}).
const ApprovalDecisionName = "approval_decision"

// logValue is the value of a ToolCallLogName event.
type logValue struct {
	ToolCallID string `json:"toolCallId"`
	Level      string `json:"level"`
	Message    string `json:"message"`
}

// progressValue is the value of a ToolCallProgressName event.
type progressValue struct {
	ToolCallID string  `json:"toolCallId"`
	Progress   float64 `json:"progress"`
	Total      float64 `json:"total,omitempty"`
	Message    string  `json:"message,omitempty"`
}

// Event is an AG-UI event; json.Marshal gives its wire form. The concrete
// types are the *Event structs of this package.
type Event interface {
	EventType() EventType
}

// Base holds the fields every AG-UI event has.
type Base struct {
	Type EventType `json:"type"`
	// Timestamp is milliseconds since the Unix epoch.
	Timestamp int64 `json:"timestamp,omitempty"`
	// RawEvent is, when set, the data the event was made from in another
	// form (Convert leaves it empty).
	RawEvent json.RawMessage `json:"rawEvent,omitempty"`
}

// EventType returns the event's type.
func (b Base) EventType() EventType { return b.Type }

// RunStartedEvent is RUN_STARTED.
type RunStartedEvent struct {
	Base
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
	// ProtocolVersion declares the AG-UI version the stream speaks
	// (ProtocolVersion), as AG-UI 1.0 requires of the event opening a run.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
}

// ProtocolVersion is the AG-UI protocol version these events follow,
// declared on RUN_STARTED.
const ProtocolVersion = "1.0"

// RunFinishedEvent is RUN_FINISHED; Result is the value of the code's
// final expression as JSON (its repr as a JSON string when JSON cannot
// carry it), absent for None. Outcome says why the run ended; Convert
// leaves it absent, which AG-UI reads as success.
type RunFinishedEvent struct {
	Base
	ThreadID string          `json:"threadId"`
	RunID    string          `json:"runId"`
	Result   json.RawMessage `json:"result,omitempty"`
	Outcome  *Outcome        `json:"outcome,omitempty"`
}

// Outcome types of RUN_FINISHED (AG-UI 1.0's RunFinishedOutcome).
const (
	// OutcomeSuccess: the run completed.
	OutcomeSuccess = "success"
	// OutcomeInterrupt: the run is paused, waiting for what its
	// Interrupts name; a new run answers them.
	OutcomeInterrupt = "interrupt"
)

// Outcome is RUN_FINISHED's "outcome": why the run ended. Type is
// OutcomeSuccess, or OutcomeInterrupt with at least one Interrupt.
type Outcome struct {
	Type       string      `json:"type"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// Interrupt is something a paused run needs from outside before it can go
// on (AG-UI 1.0), such as the result of a tool call the client answers.
type Interrupt struct {
	// ID identifies the interrupt within the run; the answer names it.
	ID string `json:"id"`
	// Reason says why the run stopped (an open string).
	Reason string `json:"reason"`
	// Message is a prompt for whoever answers.
	Message string `json:"message,omitempty"`
	// ToolCallID is the tool call (TOOL_CALL_START) the interrupt waits on.
	ToolCallID string `json:"toolCallId,omitempty"`
	// ExpiresAt is when the interrupt stops being answerable (ISO 8601).
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Metadata is free-form data for the client.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// RunErrorEvent is RUN_ERROR; Code is the Python exception type when the
// code raised.
type RunErrorEvent struct {
	Base
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// StepStartedEvent is STEP_STARTED: a host call started running.
type StepStartedEvent struct {
	Base
	StepName string `json:"stepName"`
}

// StepFinishedEvent is STEP_FINISHED: the host call returned (or the run
// ended while it was still running).
type StepFinishedEvent struct {
	Base
	StepName string `json:"stepName"`
}

// TextMessageStartEvent is TEXT_MESSAGE_START.
type TextMessageStartEvent struct {
	Base
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
}

// TextMessageContentEvent is TEXT_MESSAGE_CONTENT (Delta is never empty).
type TextMessageContentEvent struct {
	Base
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

// TextMessageEndEvent is TEXT_MESSAGE_END.
type TextMessageEndEvent struct {
	Base
	MessageID string `json:"messageId"`
}

// ToolCallStartEvent is TOOL_CALL_START.
type ToolCallStartEvent struct {
	Base
	ToolCallID      string `json:"toolCallId"`
	ToolCallName    string `json:"toolCallName"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
}

// ToolCallArgsEvent is TOOL_CALL_ARGS.
type ToolCallArgsEvent struct {
	Base
	ToolCallID string `json:"toolCallId"`
	Delta      string `json:"delta"`
}

// ToolCallEndEvent is TOOL_CALL_END.
type ToolCallEndEvent struct {
	Base
	ToolCallID string `json:"toolCallId"`
}

// ToolCallResultEvent is TOOL_CALL_RESULT.
type ToolCallResultEvent struct {
	Base
	MessageID  string `json:"messageId"`
	ToolCallID string `json:"toolCallId"`
	Content    string `json:"content"`
	Role       string `json:"role,omitempty"`
}

// Adapter maps the events of runs to AG-UI events. It holds no state, so a
// value is safe for concurrent use.
type Adapter struct {
	// ThreadID and RunID are injected into RUN_STARTED and RUN_FINISHED;
	// an empty RunID means the agent event's own run id.
	ThreadID string
	RunID    string
	// ParentMessageID, when set, is the parentMessageId of every
	// TOOL_CALL_START (for example the assistant message that called
	// execute_python).
	ParentMessageID string
}

// Convert maps one event. It panics on an event type package agent does
// not define, which would be a programming error.
func (a Adapter) Convert(e agent.Event) Event {
	b := func(t EventType) Base {
		var ms int64
		if !e.Time.IsZero() {
			ms = e.Time.UnixMilli()
		}
		return Base{Type: t, Timestamp: ms}
	}
	runID := a.RunID
	if runID == "" {
		runID = e.RunID
	}
	switch e.Type {
	case agent.RunStarted:
		return &RunStartedEvent{Base: b(RunStartedType), ThreadID: a.ThreadID, RunID: runID, ProtocolVersion: ProtocolVersion}
	case agent.RunFinished:
		ev := &RunFinishedEvent{Base: b(RunFinishedType), ThreadID: a.ThreadID, RunID: runID}
		if _, none := e.Value.(object.None); e.Value != nil && !none {
			ev.Result = tools.ValueJSON(e.Value)
		}
		return ev
	case agent.RunError:
		ev := &RunErrorEvent{Base: b(RunErrorType), Message: "run failed"}
		if e.Err != nil {
			ev.Message = e.Err.Error()
		}
		var pyErr *runtime.Error
		if errors.As(e.Err, &pyErr) {
			ev.Code = pyErr.Type
		}
		return ev
	case agent.StepStarted:
		return &StepStartedEvent{Base: b(StepStartedType), StepName: e.StepName}
	case agent.StepFinished:
		return &StepFinishedEvent{Base: b(StepFinishedType), StepName: e.StepName}
	case agent.TextStart:
		return &TextMessageStartEvent{Base: b(TextMessageStartType), MessageID: e.MessageID, Role: "assistant"}
	case agent.TextContent:
		return &TextMessageContentEvent{Base: b(TextMessageContentType), MessageID: e.MessageID, Delta: e.Delta}
	case agent.TextEnd:
		return &TextMessageEndEvent{Base: b(TextMessageEndType), MessageID: e.MessageID}
	case agent.ToolCallStart:
		return &ToolCallStartEvent{Base: b(ToolCallStartType), ToolCallID: e.ToolCallID, ToolCallName: e.ToolName, ParentMessageID: a.ParentMessageID}
	case agent.ToolCallArgs:
		return &ToolCallArgsEvent{Base: b(ToolCallArgsType), ToolCallID: e.ToolCallID, Delta: e.Delta}
	case agent.ToolCallEnd:
		return &ToolCallEndEvent{Base: b(ToolCallEndType), ToolCallID: e.ToolCallID}
	case agent.ToolCallProgress:
		return &CustomEvent{Base: b(CustomType), Name: ToolCallProgressName,
			Value: progressValue{ToolCallID: e.ToolCallID, Progress: e.Progress, Total: e.Total, Message: e.Delta}}
	case agent.ToolCallLog:
		return &CustomEvent{Base: b(CustomType), Name: ToolCallLogName, Value: logValue{ToolCallID: e.ToolCallID, Level: e.Level, Message: e.Delta}}
	case agent.ApprovalDecision:
		return &CustomEvent{Base: b(CustomType), Name: ApprovalDecisionName, Value: e.Decision}
	case agent.ToolCallResult:
		return &ToolCallResultEvent{Base: b(ToolCallResultType), MessageID: e.ToolCallID + "-result", ToolCallID: e.ToolCallID, Content: e.Result, Role: "tool"}
	}
	panic(fmt.Sprintf("agui: unknown agent event type %q", e.Type))
}

// Sink returns an agent event sink (for agent.Run or
// Executor.ExecuteEvents) that converts each event and passes it to emit.
func (a Adapter) Sink(emit func(Event)) func(agent.Event) {
	return func(e agent.Event) { emit(a.Convert(e)) }
}

// WriteSSE writes e as one server-sent event ("data: <json>\n\n"), the
// encoding AG-UI uses over HTTP.
func WriteSSE(w io.Writer, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("agui: encoding %s: %w", e.EventType(), err)
	}
	buf := make([]byte, 0, len(b)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	_, err = w.Write(buf)
	return err
}
