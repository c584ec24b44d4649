package main

import "time"

// OpKind says what a logical request did to a session's list.
type OpKind int

const (
	// Append appends Op.Value to the session's list `log` and returns the
	// whole list.
	Append OpKind = iota
	// Read returns the whole list and changes nothing (the final read).
	Read
)

// Outcome is what the client finally learnt about a logical request.
type Outcome int

const (
	// Acked: the server answered 200 with the list; the effect happened.
	Acked Outcome = iota
	// Refused: the server answered that the code raised (a Python error in a
	// 200) or refused the request outright; the effect did not happen.
	Refused
	// Unknown: the client gave up without an answer (time-outs, connection
	// errors, 5xx until its deadline); the effect may or may not have
	// happened.
	Unknown
)

// String names the outcome as the reports do.
func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Refused:
		return "refused"
	default:
		return "unknown"
	}
}

// Attempt is one HTTP request of a logical request: the first try or a
// retry with the same Idempotency-Key.
type Attempt struct {
	Instance int
	Start    time.Time
	End      time.Time
	// Class is the answer's class: "200" (or "200 NameError" when the code
	// raised), "<status> <error code>", "timeout", "connection refused",
	// "connection reset", "transport" (other network errors).
	Class string
	// Replayed is true when the server sent Idempotent-Replayed: true.
	Replayed bool
	// RetryAfter is true when the answer carried a Retry-After header.
	RetryAfter bool
	// Detail is the error message, for the report.
	Detail string
}

// Op is one logical request of one client on one session: tried until it
// is answered or its deadline passes, every try with the same key.
type Op struct {
	Session string
	Client  int
	Kind    OpKind
	Value   string // the appended value (Append)
	Key     string // the Idempotency-Key (Append)
	// ExpectState sends If-Match: * (every request but the session's
	// first): a session the store lost is refused with 412, never
	// continued as an empty one.
	ExpectState bool
	Call        time.Time
	Return      time.Time
	Outcome     Outcome
	// List is the session's list the server returned (Acked).
	List     []string
	Attempts []Attempt
	// Warning is the state_warning code of the answer, if any.
	Warning string
	// PyError is the Python exception type when the code raised.
	PyError string
}

// SessionHistory is everything the clients did on one session, the final
// read included (an Op of Kind Read, last).
type SessionHistory struct {
	ID  string
	Ops []Op
	// LossExpected marks a session that lived through a fault that
	// destroys stored data (a Redis restart without persistence): its lost
	// effects are reported, not counted as violations.
	LossExpected bool
}
