package runtime

import "time"

// Limits bound what one call may use. Zero values mean "no limit", except
// MaxRecursion, where zero means the interpreter default (1000).
type Limits struct {
	// MaxDuration bounds the time Python code runs in one call (Run, or a
	// Start/Feed with all its resumes); time spent in the host between
	// resumes does not count.
	MaxDuration time.Duration
	// MaxMemory bounds the interpreter's heap, in bytes. Exceeding it raises
	// MemoryError; the interpreter stays usable. A hard ceiling of twice the
	// limit plus 64 MiB ends the instance if an allocation jumps past both.
	MaxMemory int64
	// MaxRecursion bounds the Python call stack depth (0: the interpreter's
	// DefaultMaxRecursion). Depths far above the default make recursion
	// slow to stop: at 100,000 frames a 3 s MaxDuration was measured to end
	// the code only after about 8 s, as Monty's per-call cost grows with the
	// stack. Services should not let callers raise it freely.
	MaxRecursion int
	// MaxOutput bounds print() output per call, in bytes. Output beyond it is
	// dropped and the print raises MemoryError (ErrOutputLimit).
	MaxOutput int
}

// DefaultMaxRecursion is the interpreter's call depth limit when
// Limits.MaxRecursion is zero.
const DefaultMaxRecursion = 1000

// DefaultLimits are the limits of a new Interpreter: no time or memory
// limit, the interpreter's recursion default, and 1 MiB of print output.
func DefaultLimits() Limits {
	return Limits{MaxOutput: 1 << 20}
}
