package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
)

// Status codes of failures the code or the request caused (docs/http.md,
// "Errors"): what the client sent is too large → 413; what the call needs
// is beyond a limit → 422. Neither is retried as is by well-behaved
// clients, unlike 408, and neither is the server's fault, unlike a 5xx.
const (
	statusLimit    = http.StatusUnprocessableEntity
	statusTooLarge = http.StatusRequestEntityTooLarge
)

// Codes of the limit answers that are not a runtime.LimitKind.
const (
	// codeStateTooLarge: a state blob too large to store (upload), or to
	// load under the memory limit (exec).
	codeStateTooLarge = "state_too_large"
	// codeAborted: the code made the interpreter abort for another reason
	// than the memory ceiling.
	codeAborted = "interpreter_aborted"
)

// Caps on the parts of an exception in an answer: the interpreter bounds
// its own text only by its memory limit, and an answer must stay small.
const (
	maxErrorText   = 64 << 10 // message and formatted traceback
	maxFrames      = 100      // traceback entries (first and last halves kept)
	maxFrameSource = 1 << 10  // source line of one entry
)

// keptNote ends every limit message: calls are transactional.
const keptNote = " The session keeps its state from before the call."

// execLimitError maps the failure of an execution to a 422 answer when the
// code (or the stored state it needed) ran into a limit, and returns nil
// for any other failure. opened is false when the session could not even be
// opened (the stored state did not load). lim is the call's limits, srv the
// server's maxima.
func execLimitError(err error, pyErr *runtime.Error, opened bool, lim, srv runtime.Limits) *apiError {
	var state *runtime.StateLimitError
	switch {
	case err == nil && pyErr != nil && pyErr.Limit != runtime.NoLimit:
		return &apiError{status: statusLimit, code: pyErr.Limit.String(), msg: limitMessage(pyErr.Limit, pyErr.Message, lim, srv)}
	case err == nil:
		return nil
	case errors.As(err, &state) || (!opened && errors.Is(err, runtime.ErrMemoryLimit)):
		need := "more heap than"
		if state != nil {
			need = fmt.Sprintf("at least %s of heap, more than", byteSize(state.Need))
		}
		return &apiError{status: statusLimit, code: codeStateTooLarge, msg: fmt.Sprintf(
			"the session's stored state needs %s this call's memory limit of %s, so nothing ran and the stored state is kept unchanged. Delete the state (DELETE /state/{id}) to start afresh%s.",
			need, byteSize(lim.MaxMemory), askFor("ask for more memory", "limits.memory_bytes", byteSize(lim.MaxMemory), byteSize(srv.MaxMemory), lim.MaxMemory < srv.MaxMemory || srv.MaxMemory == 0))}
	}
	if !opened && errors.Is(err, vfs.ErrNoSpace) {
		return &apiError{status: statusLimit, code: codeStateTooLarge, msg: fmt.Sprintf(
			"the session's stored files are larger than this server's limit on a session's files, so nothing ran and the stored state is kept unchanged (%s). Delete the state (DELETE /state/{id}) to start afresh.", errText(err))}
	}
	kind := runtime.LimitOf(err)
	switch {
	case kind != runtime.NoLimit && !opened:
		return &apiError{status: statusLimit, code: kind.String(), msg: fmt.Sprintf(
			"loading the session's stored state ran into a limit (%s), so nothing ran; the stored state is kept unchanged.", errText(err))}
	case kind != runtime.NoLimit:
		return &apiError{status: statusLimit, code: kind.String(), msg: limitMessage(kind, errText(err), lim, srv)}
	case !opened:
		// Anything else that stops a session from loading is the
		// server's trouble (storeError), not the code's.
		return nil
	}
	var trap *runtime.TrapError
	if errors.As(err, &trap) {
		// The guest's own words, when it left any; never wazero's text,
		// which goes on with a wasm stack trace.
		msg := "the code made the interpreter abort"
		if why, _, _ := strings.Cut(strings.TrimSpace(trap.Stderr), "\n"); why != "" {
			msg += " (" + truncate(why, 1<<10) + ")"
		}
		return &apiError{status: statusLimit, code: codeAborted, msg: msg + "; it was replaced, and nothing of this call was saved." + keptNote}
	}
	return nil
}

// limitMessage says which limit the code ran into, and what to do.
// detail is the interpreter's or the runtime's own text.
func limitMessage(kind runtime.LimitKind, detail string, lim, srv runtime.Limits) string {
	var msg string
	switch kind {
	case runtime.TimeLimit:
		msg = fmt.Sprintf("the code ran for longer than its time limit of %s (wall clock: sleeps, awaits and host calls count) and was stopped. Make it faster%s.",
			lim.MaxDuration, askFor("ask for more time", "limits.duration_ms", lim.MaxDuration.String(), srv.MaxDuration.String(), srv.MaxDuration == 0 || lim.MaxDuration < srv.MaxDuration))
	case runtime.MemoryLimit:
		msg = fmt.Sprintf("the code needed more memory than its limit of %s and was stopped (%s). Use less memory (smaller lists and strings, generators)%s.",
			byteSize(lim.MaxMemory), detail, askFor("ask for more", "limits.memory_bytes", byteSize(lim.MaxMemory), byteSize(srv.MaxMemory), srv.MaxMemory == 0 || lim.MaxMemory < srv.MaxMemory))
	case runtime.RecursionLimit:
		depth := lim.MaxRecursion
		if depth == 0 {
			depth = runtime.DefaultMaxRecursion
		}
		msg = fmt.Sprintf("the code nested function calls deeper than its recursion limit of %d frames and was stopped. Use a loop instead of deep recursion.", depth)
	case runtime.OutputLimit:
		msg = fmt.Sprintf("the code printed more than its output limit of %s; the rest was dropped and the code stopped. Print less (a summary, the first lines)%s.",
			byteSize(int64(lim.MaxOutput)), askFor("ask for more", "limits.output_bytes", byteSize(int64(lim.MaxOutput)), byteSize(int64(srv.MaxOutput)), lim.MaxOutput < srv.MaxOutput))
	case runtime.IntLimit:
		bits := lim.MaxIntBits
		if bits == 0 {
			bits = runtime.DefaultMaxIntBits
		}
		msg = fmt.Sprintf("an operation would have produced an integer of more than %d bits (about %d decimal digits), which is refused so that one operation cannot run for minutes; the code was stopped. Use smaller numbers (for example pow(a, b, m) for modular powers).",
			bits, bits*30103/100000)
	case runtime.ResultLimit:
		msg = fmt.Sprintf("the value of the last expression is larger than the result limit of %s, so it was not sent back and the call was not saved. Return something smaller (a slice, a count, a summary)%s.",
			byteSize(lim.MaxResult), askFor("ask for more", "limits.result_bytes", byteSize(lim.MaxResult), byteSize(srv.MaxResult), lim.MaxResult < srv.MaxResult))
	case runtime.HostCallLimit:
		msg = fmt.Sprintf("the code made too many host calls, or spent too long in them (%s); every time.sleep, asyncio.sleep and awaited call counts. Make fewer calls per request.", detail)
	default:
		msg = fmt.Sprintf("the code ran into a limit (%s).", detail)
	}
	return msg + keptNote
}

// askFor ends a suggestion: ", or" asking for a larger limit when the
// request's is below the server's maximum, or saying that it is the
// maximum.
func askFor(verb, field, cur, max string, room bool) string {
	switch {
	case room && (max == "no limit" || max == "0s"):
		return fmt.Sprintf(", or %s with %s (this call had %s)", verb, field, cur)
	case room:
		return fmt.Sprintf(", or %s with %s (this call had %s, the server allows up to %s)", verb, field, cur, max)
	}
	return fmt.Sprintf("; %s is this server's maximum", cur)
}

// errText is an error's text without the runtime's "monty: " prefix.
func errText(err error) string {
	return strings.TrimPrefix(err.Error(), "monty: ")
}

// byteSize formats a size for a message as runtime.ByteSize does ("16
// MiB", "1.5 KiB", "100 bytes"), 0 as "no limit".
func byteSize(n int64) string {
	if n == 0 {
		return "no limit"
	}
	return runtime.ByteSize(n)
}

// truncate cuts s to at most n bytes (at a character boundary), saying how
// much was left out.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d more bytes not shown]", len(s)-cut)
}

// durationMS is a duration in milliseconds, with microseconds.
func durationMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
