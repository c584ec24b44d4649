package guest

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
)

// GuardedSize is the address space a guarded linear memory reserves:
// every byte a wasm32 load or store can reach (a 32-bit address plus a
// 32-bit offset, plus the access's up to 8 bytes), in whole 64 KiB pages.
const GuardedSize = 1<<33 + 1<<16

// ErrOutOfBounds is the trap of a load or store past linear memory's
// length, which faulted in a guarded reservation (wazero's words for the
// same trap).
var ErrOutOfBounds = errors.New("out of bounds memory access")

// ErrPastMax says a new instance's memory would start past the
// reservation's Max.
var ErrPastMax = errors.New("linear memory past its limit")

// Crash ends the process for p, a memory fault recovered while the module
// ran that is not the module's (outside its reservation), with exit status
// 2 and the fault and this goroutine's stack on stderr, as Go ends a
// process for a fault when debug.SetPanicOnFault is off: recovering from
// it would leave the program running on memory it never meant to touch.
func Crash(p any) {
	debug.SetPanicOnFault(false)
	addr := uintptr(0)
	if f, ok := p.(interface{ Addr() uintptr }); ok {
		addr = f.Addr()
	}
	fmt.Fprintf(os.Stderr, "fatal error: unexpected fault address %#x outside the translated module's memory: %v\n\n%s",
		addr, p, debug.Stack())
	os.Exit(2)
}
