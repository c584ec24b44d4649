package runtime

import "context"

// The engine boundary: what this package needs from whatever runs the
// interpreter module (docs/abi.md). wazero compiling monty.wasm is the
// default implementation (wazero.go); the module translated to Go ahead of
// time, which a program links in by importing
// github.com/monty-go/monty/wasm/aot, is the other (aot.go). Everything
// else in the package (requests, limits, cancellation by the clock, dumps)
// is written against these two interfaces only.

// module is the interpreter module ready to be instantiated. It is safe
// for concurrent use.
type module interface {
	// instantiate makes an instance with its own linear memory, its
	// _initialize already run. Its imports serve it: monty.print
	// delivers to it.printOutput, WASI's clocks read it.nanotime and the
	// wall clock, random_get reads crypto/rand, and the guest's stderr
	// goes to it.stderr.
	instantiate(ctx context.Context, it *Interpreter) (instance, error)
	// machine reports whether instances run compiled machine code (false:
	// wazero's interpreter engine during a fast start).
	machine() bool
	// close frees the module; its instances must be closed first or be
	// abandoned.
	close(ctx context.Context)
}

// instance is one instance of the module. It is not safe for concurrent
// use. An error from one of its functions is a trap: the instance must not
// be called again.
type instance interface {
	// abiVersion calls monty_abi_version.
	abiVersion(ctx context.Context) (uint32, error)
	// reserve calls monty_reserve: the address of a request buffer of at
	// least n bytes.
	reserve(ctx context.Context, n uint32) (uint32, error)
	// call calls monty_call: the response's (ptr << 32) | len.
	call(ctx context.Context, op, handle, n uint32) (uint64, error)
	// release calls monty_release.
	release(ctx context.Context) error
	// read returns n bytes of linear memory at ptr, valid until the next
	// call into the instance; false when they are outside the memory.
	read(ptr, n uint32) ([]byte, bool)
	// write copies b into linear memory at ptr; false when it does not fit.
	write(ptr uint32, b []byte) bool
	// close frees the instance and its memory.
	close(ctx context.Context) error
}
