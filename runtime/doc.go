// Package runtime runs Python code with Monty, pydantic's sandboxed Python
// interpreter, compiled to WebAssembly and executed by wazero: no cgo, no
// Rust toolchain, no subprocess.
//
// An [Engine] compiles the embedded module once per process ([Default] gives
// a shared one, [Precompile] warms it up front, [WithCacheDir] keeps the
// machine code on disk between processes). Each [Interpreter] is one module
// instance: its own memory, its own limits, and handles for the compiled
// [Program]s, paused [Execution]s and [REPL]s it holds. An Interpreter is not
// safe for concurrent use; use one per goroutine, or take them from a [Pool].
//
// Running code:
//
//   - [Program.Run] executes compiled code with inputs and returns the value
//     of its final expression.
//   - [Program.Start] and [REPL.Feed] return an [Execution] that pauses
//     whenever the code needs the host: a call to a host function, a name the
//     interpreter does not know, an OS operation (files, environment, clock),
//     or futures to resolve. Answer each pause with [Execution.Resume].
//   - A [Host] answers pauses itself: Go functions by name (sync or async, run
//     concurrently under asyncio.gather), host objects whose attribute reads
//     and method calls come back to Go (an [ObjectHandler]) and an
//     [OSHandler].
//   - Programs, paused executions and REPLs dump to bytes and load into any
//     interpreter of a compatible module, in this process or another.
//   - The file systems an [OSHandler] serves the code are in package
//     runtime/vfs (in memory, a host directory, copy-on-write over one,
//     several mounted together). [WithCwd] starts the code in one, and
//     [WithTimezone] sets the sandbox's local time zone (UTC by default).
//
// Python exceptions come back as *[Error] (type, message, traceback); the
// limits in [Limits] raise errors that match [ErrTimeLimit],
// [ErrMemoryLimit], [ErrRecursionLimit] and [ErrOutputLimit] with errors.Is;
// cancelling the context stops running code and returns an error matching
// [ErrCancelled]. A module instance that aborts is dead ([ErrDead]); the
// process is never affected.
package runtime
