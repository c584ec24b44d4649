package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors, for use with errors.Is.
var (
	// ErrTimeLimit matches an *Error raised because Limits.MaxDuration was exceeded.
	ErrTimeLimit = errors.New("monty: time limit exceeded")
	// ErrMemoryLimit matches an *Error raised because Limits.MaxMemory was exceeded.
	ErrMemoryLimit = errors.New("monty: memory limit exceeded")
	// ErrRecursionLimit matches an *Error raised because Limits.MaxRecursion was exceeded.
	ErrRecursionLimit = errors.New("monty: recursion limit exceeded")
	// ErrOutputLimit matches an *Error raised because Limits.MaxOutput was exceeded.
	ErrOutputLimit = errors.New("monty: print output limit exceeded")
	// ErrIntLimit matches an *Error raised because an operation would have
	// produced an integer larger than Limits.MaxIntBits.
	ErrIntLimit = errors.New("monty: integer size limit exceeded")
	// ErrResultLimit matches the error returned when a value leaving the
	// sandbox (a result, host call arguments) is larger than Limits.MaxResult.
	ErrResultLimit = errors.New("monty: result size limit exceeded")
	// ErrHostCallLimit matches an error returned when a run made more host
	// calls, or spent longer in them, than the Host allows.
	ErrHostCallLimit = errors.New("monty: host call limit exceeded")
	// ErrCancelled matches the error returned when the context of a call was
	// cancelled or its deadline passed while Python code was running. The
	// error also matches the context's own error (context.Canceled or
	// context.DeadlineExceeded).
	ErrCancelled = errors.New("monty: execution cancelled")
	// ErrDead matches every error from an interpreter whose module instance
	// trapped (a guest abort, such as the hard memory ceiling) or was closed.
	// Discard the interpreter and use a new one.
	ErrDead = errors.New("monty: interpreter is dead")
	// ErrInvalidDump matches errors from loading bytes that are not an intact
	// dump of the requested kind from a compatible module.
	ErrInvalidDump = errors.New("monty: invalid dump")
	// ErrBadState matches misuse of the API: resuming something that is not
	// paused, feeding a REPL that is paused, using a freed handle.
	ErrBadState = errors.New("monty: invalid state for this operation")

	// ErrInvalidOption is returned by Compile and NewREPL for an option the
	// module cannot apply (an unknown time zone, a relative working directory).
	ErrInvalidOption = errors.New("monty: invalid option")

	// ErrModuleNotEmbedded is returned by NewEngine when the engine would
	// run monty.wasm on wazero in a program built with the tag
	// monty_noembed, which carries no monty.wasm: link the interpreter
	// translated ahead of time (github.com/monty-go/monty/wasm/aot) and do
	// not ask for wazero, or build without the tag.
	ErrModuleNotEmbedded = errors.New("monty: this program carries no monty.wasm (built with -tags monty_noembed): " +
		"it runs only the interpreter translated ahead of time; link github.com/monty-go/monty/wasm/aot and drop WithWazero, " +
		"pass the module with WithModule, or build without the tag")
)

// LimitKind says which resource limit, if any, raised an exception.
type LimitKind uint8

// Limit kinds. The first six are raised inside the sandbox (Error.Limit);
// LimitOf also reports the two the host enforces.
const (
	NoLimit LimitKind = iota
	TimeLimit
	MemoryLimit
	RecursionLimit
	OutputLimit
	IntLimit
	ResultLimit
	HostCallLimit
)

var limitNames = [...]string{"", "time_limit", "memory_limit", "recursion_limit", "output_limit",
	"int_size_limit", "result_size_limit", "host_call_limit"}

// String is a stable machine-readable name ("time_limit", "memory_limit",
// ...), empty for NoLimit; the service surfaces use it as an error code.
func (k LimitKind) String() string {
	if int(k) < len(limitNames) {
		return limitNames[k]
	}
	return "limit"
}

// ExceptionType is the Python exception a failure of this limit is reported
// as ("TimeoutError", "MemoryError", "OverflowError", ...), for surfaces
// that show every failure of the code the way Python would.
func (k LimitKind) ExceptionType() string {
	switch k {
	case TimeLimit:
		return "TimeoutError"
	case MemoryLimit, OutputLimit, ResultLimit:
		return "MemoryError"
	case IntLimit:
		return "OverflowError"
	case RecursionLimit:
		return "RecursionError"
	}
	return "RuntimeError"
}

// LimitLine renders a limit failure the host reported (not raised as a
// Python exception) as Python would print it: "MemoryError: result size
// limit exceeded: ...". ok is false when err is not about a limit.
func LimitLine(err error) (line string, ok bool) {
	k := LimitOf(err)
	if k == NoLimit {
		return "", false
	}
	var pyErr *Error
	if errors.As(err, &pyErr) {
		return pyErr.Error(), true
	}
	return k.ExceptionType() + ": " + strings.TrimPrefix(err.Error(), "monty: "), true
}

// limitSentinels maps each kind to its sentinel error.
var limitSentinels = [...]error{nil, ErrTimeLimit, ErrMemoryLimit, ErrRecursionLimit, ErrOutputLimit,
	ErrIntLimit, ErrResultLimit, ErrHostCallLimit}

// LimitOf reports which limit err is about, or NoLimit: a limit the code
// ran into, as opposed to a fault of the host. Every surface uses it to
// tell a client error ("your code used too much") from a server error.
func LimitOf(err error) LimitKind {
	if err == nil {
		return NoLimit
	}
	for k := TimeLimit; k <= HostCallLimit; k++ {
		if errors.Is(err, limitSentinels[k]) {
			return k
		}
	}
	return NoLimit
}

// Frame is one entry of a Python traceback.
type Frame struct {
	Filename  string
	Line      int
	Column    int
	EndLine   int
	EndColumn int
	// Name is the function name; empty for module-level code.
	Name string
	// Source is the line of code, when known.
	Source string
}

// Error is a Python exception that ended a run: a SyntaxError at compile
// time, or any exception raised and not caught at run time.
type Error struct {
	// Type is the exception class name, e.g. "ValueError".
	Type string
	// Message is str() of the exception; HasMessage is false for a bare raise
	// such as `raise ValueError`.
	Message    string
	HasMessage bool
	// Traceback lists frames outermost first, as CPython prints them.
	Traceback []Frame
	// Text is the CPython-style formatted traceback.
	Text string
	// Limit is the resource limit that raised the exception, if any.
	Limit LimitKind
}

// Error returns "Type: message".
func (e *Error) Error() string {
	if !e.HasMessage || e.Message == "" {
		return e.Type
	}
	return e.Type + ": " + e.Message
}

// Is makes errors.Is(err, ErrTimeLimit) and friends work.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrTimeLimit:
		return e.Limit == TimeLimit
	case ErrMemoryLimit:
		return e.Limit == MemoryLimit
	case ErrRecursionLimit:
		return e.Limit == RecursionLimit
	case ErrOutputLimit:
		return e.Limit == OutputLimit
	case ErrIntLimit:
		return e.Limit == IntLimit
	case ErrResultLimit:
		return e.Limit == ResultLimit
	}
	return false
}

// Line is the line number of the innermost frame, or 0.
func (e *Error) Line() int {
	if len(e.Traceback) == 0 {
		return 0
	}
	return e.Traceback[len(e.Traceback)-1].Line
}

// Exception is an error a host function returns to raise a specific Python
// exception type in the sandbox. Other errors are raised as RuntimeError.
type Exception struct {
	// Type is a builtin exception class name, e.g. "ValueError".
	Type string
	// Message is the exception's argument.
	Message string
}

// Error returns "Type: message".
func (e *Exception) Error() string { return e.Type + ": " + e.Message }

// timeLimitCause is the cause of a context whose deadline is a call's
// MaxDuration (see Interpreter.withDeadline).
type timeLimitCause struct{ limit time.Duration }

func (c *timeLimitCause) Error() string { return c.message() }

func (c *timeLimitCause) message() string {
	return fmt.Sprintf("time limit exceeded: the call ran for longer than %s (wall clock, sleeps and host calls included)", c.limit)
}

// asError is the TimeoutError a call stopped by this cause ends with, with
// the traceback of the code it interrupted, if any.
func (c *timeLimitCause) asError(interrupted *Error) *Error {
	line := "TimeoutError: " + c.message()
	e := &Error{Type: "TimeoutError", Message: c.message(), HasMessage: true, Limit: TimeLimit, Text: line}
	if interrupted != nil {
		e.Traceback = interrupted.Traceback
		text := strings.TrimRight(interrupted.Text, "\n")
		if i := strings.LastIndexByte(text, '\n'); i >= 0 {
			e.Text = text[:i+1] + line
		}
	}
	return e
}

// stopError is the error of a call that ctx stopped: the call's time limit
// when ctx's deadline was its MaxDuration, otherwise a cancellation.
// interrupted is the exception the stop raised in the code, if any.
func stopError(ctx context.Context, interrupted *Error) error {
	cause := context.Cause(ctx)
	var tl *timeLimitCause
	if errors.As(cause, &tl) {
		return tl.asError(interrupted)
	}
	return &cancelledError{cause: cause}
}

// cancelledError is returned when the context ended a run.
type cancelledError struct{ cause error }

func (e *cancelledError) Error() string {
	if e.cause == nil {
		return "monty: execution cancelled"
	}
	return "monty: execution cancelled: " + e.cause.Error()
}
func (e *cancelledError) Is(target error) bool {
	return target == ErrCancelled
}
func (e *cancelledError) Unwrap() error { return e.cause }

// TrapError reports that the module instance aborted (a Rust panic, the
// allocator's hard ceiling, a stack overflow). It matches ErrDead.
type TrapError struct {
	// Cause is wazero's error.
	Cause error
	// Stderr holds what the guest wrote to stderr before aborting, which
	// usually names the reason.
	Stderr string
}

func (e *TrapError) Error() string {
	if e.MemoryCeiling() {
		return "monty: memory limit exceeded: an allocation passed the interpreter's hard memory ceiling " +
			"(twice the memory limit plus 64 MiB), which ends the interpreter; use less memory or raise the limit"
	}
	// wazero's text goes on with a wasm stack trace: only its first line
	// means anything to a reader.
	cause, _, _ := strings.Cut(e.Cause.Error(), "\n")
	msg := "monty: interpreter aborted: " + cause
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += " (" + s + ")"
	}
	return msg + "; the interpreter is dead, use a new one"
}

// MemoryCeiling reports whether the allocator's hard memory ceiling ended
// the instance (the error then also matches ErrMemoryLimit).
func (e *TrapError) MemoryCeiling() bool {
	return strings.Contains(e.Stderr, "exceeds the memory limit")
}

// Is makes errors.Is(err, ErrDead) true, and ErrMemoryLimit when the hard
// memory ceiling ended the instance.
func (e *TrapError) Is(target error) bool {
	return target == ErrDead || (target == ErrMemoryLimit && e.MemoryCeiling())
}

// Unwrap returns wazero's error.
func (e *TrapError) Unwrap() error { return e.Cause }

// valueTooLarge starts the module's message for a value over the MaxResult cap.
const valueTooLarge = "value too large to transfer"

// apiError is a request the module refused (misuse of handles or state).
func apiError(msg string) error {
	if strings.HasPrefix(msg, "cannot load state") || strings.HasPrefix(msg, "not a compiled program") ||
		strings.HasPrefix(msg, "state is not of the requested kind") {
		return fmt.Errorf("%w: %s", ErrInvalidDump, msg)
	}
	if strings.HasPrefix(msg, "unknown time zone") || strings.HasPrefix(msg, "working directory") {
		return fmt.Errorf("%w: %s", ErrInvalidOption, msg)
	}
	return fmt.Errorf("%w: %s", ErrBadState, msg)
}
