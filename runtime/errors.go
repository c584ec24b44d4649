package runtime

import (
	"errors"
	"fmt"
	"strings"
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
)

// LimitKind says which resource limit, if any, raised an exception.
type LimitKind uint8

// Limit kinds.
const (
	NoLimit LimitKind = iota
	TimeLimit
	MemoryLimit
	RecursionLimit
	OutputLimit
)

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

// cancelledError is returned when the context ended a run.
type cancelledError struct{ cause error }

func (e *cancelledError) Error() string { return "monty: execution cancelled: " + e.cause.Error() }
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
	msg := "monty: interpreter aborted: " + e.Cause.Error()
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += " (" + s + ")"
	}
	return msg + "; the interpreter is dead, use a new one"
}

// Is makes errors.Is(err, ErrDead) true.
func (e *TrapError) Is(target error) bool { return target == ErrDead }

// Unwrap returns wazero's error.
func (e *TrapError) Unwrap() error { return e.Cause }

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
