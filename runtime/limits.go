package runtime

import "time"

// Unlimited, as the value of a field of Limits, says that there is no
// such limit. The rule is the same for every field: zero means the
// field's default, and no limit is spelled out as Unlimited. (For
// MaxDuration, MaxTurnDuration, MaxMemory and MaxHostTime the default is
// no limit.)
const Unlimited = -1

// Limits bound what one call may use. A zero field is that limit's
// default; Unlimited (any negative value) is none. The zero Limits are
// the defaults of every limit (DefaultLimits spells them out).
type Limits struct {
	// MaxDuration bounds the wall-clock time of one call: Run, or a Start or
	// Feed driven to its end by a Host, with every sleep, host function call
	// and await included. A sleep that would end past the limit fails at
	// once. Code running past it is stopped with TimeoutError
	// (ErrTimeLimit). When you drive an Execution yourself with Resume, the
	// time between your Resume calls is yours and does not count; the time
	// Python runs still does.
	MaxDuration time.Duration
	// MaxTurnDuration bounds each turn of an execution you drive yourself:
	// the Python execution time from a Start, Feed or Resume to the next
	// pause or the end, time paused on the host excluded (Monty's
	// max_turn_duration; MaxDuration is then its max_feed_duration, summed
	// over the turns). Code running past it is stopped with TimeoutError
	// "turn time limit exceeded: …" (ErrTimeLimit); the message of
	// MaxDuration's says "feed time limit". Zero: no turn limit.
	MaxTurnDuration time.Duration
	// MaxMemory bounds the interpreter's heap, in bytes, including the heap
	// of state loaded from a dump (a REPL whose heap is already larger is
	// refused with ErrMemoryLimit when loaded). Exceeding it raises
	// MemoryError; the interpreter stays usable. A hard ceiling of twice the
	// limit plus 64 MiB ends the instance if an allocation jumps past both.
	MaxMemory int64
	// MaxRecursion bounds the Python call stack depth (0: the interpreter's
	// DefaultMaxRecursion). Depths far above the default make recursion
	// slow to stop: at 100,000 frames a 3 s MaxDuration was measured to end
	// the code only after about 8 s, as Monty's per-call cost grows with the
	// stack. Services should not let callers raise it freely.
	MaxRecursion int
	// MaxOutput bounds print() output per call, in bytes (0:
	// DefaultMaxOutput). Output beyond it is dropped and the print raises
	// MemoryError (ErrOutputLimit).
	MaxOutput int
	// MaxResult bounds the encoded size, in bytes, of a value leaving the
	// sandbox: a call's result and the arguments of each host call. A larger
	// one fails with ErrResultLimit before it is copied out. 0 means
	// MaxMemory when that is set (a value cannot take more than the heap
	// may), otherwise DefaultMaxResult.
	MaxResult int64
	// MaxIntBits bounds the integers one multiplication, power, left shift
	// or math.factorial/comb/perm may produce, in bits, so that a single
	// native operation cannot run far past MaxDuration (Monty checks the
	// clock between operations, not inside one). 0 means DefaultMaxIntBits;
	// negative means no cap. Exceeding it raises an uncatchable
	// OverflowError (ErrIntLimit).
	MaxIntBits int64
	// MaxHostCalls bounds the host function and OS calls of one run a Host
	// drives (0: DefaultMaxHostCalls). The call past it ends the run with
	// ErrHostCallLimit.
	MaxHostCalls int
	// MaxHostTime bounds the wall time spent in host functions during one
	// run a Host drives (async calls count from start to result); 0: no
	// limit. Past it the run ends with ErrHostCallLimit.
	MaxHostTime time.Duration
}

// DefaultMaxOutput and DefaultMaxResult are MaxOutput's and MaxResult's
// defaults.
const (
	DefaultMaxOutput = 1 << 20
	DefaultMaxResult = 64 << 20
)

// DefaultMaxRecursion is the interpreter's call depth limit when
// Limits.MaxRecursion is zero.
const DefaultMaxRecursion = 1000

// DefaultMaxIntBits is the integer size cap when Limits.MaxIntBits is zero:
// 2^21 bits (about 630,000 decimal digits). The slowest single operation
// that reaches it, a power, was measured at 0.4 s in the module (0.06 s for
// a multiplication); at 2^22 bits it takes 1.3 s. See docs/security.md,
// "Limits".
const DefaultMaxIntBits = 1 << 21

// DefaultLimits are the limits of a new Interpreter, the zero Limits
// spelled out: no time or memory limit, the interpreter's recursion and
// integer size defaults, 1 MiB of print output, 64 MiB for a result and
// DefaultMaxHostCalls host calls.
func DefaultLimits() Limits {
	return Limits{MaxOutput: DefaultMaxOutput, MaxResult: DefaultMaxResult, MaxHostCalls: DefaultMaxHostCalls}
}

// valueCap is the effective MaxResult: 0 when there is none.
func (l Limits) valueCap() int64 {
	switch {
	case l.MaxResult > 0:
		return l.MaxResult
	case l.MaxResult < 0:
		return 0
	case l.MaxMemory > 0:
		return l.MaxMemory
	}
	return DefaultMaxResult
}

// outputCap is the effective MaxOutput: 0 when there is none.
func (l Limits) outputCap() int {
	switch {
	case l.MaxOutput > 0:
		return l.MaxOutput
	case l.MaxOutput < 0:
		return 0
	}
	return DefaultMaxOutput
}

// hostCalls is the effective MaxHostCalls: -1 when there is no limit.
func (l Limits) hostCalls() int {
	switch {
	case l.MaxHostCalls > 0:
		return l.MaxHostCalls
	case l.MaxHostCalls < 0:
		return -1
	}
	return DefaultMaxHostCalls
}

// intBits is the effective MaxIntBits: 0 when there is no cap.
func (l Limits) intBits() int64 {
	switch {
	case l.MaxIntBits == 0:
		return DefaultMaxIntBits
	case l.MaxIntBits < 0:
		return 0
	}
	return l.MaxIntBits
}
