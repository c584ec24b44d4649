// Package typecheck type-checks Python code the way Monty runs it, before
// it runs: Monty's own checker (the monty-type-checking crate: ty's
// semantic analysis against the part of the standard library Monty
// implements), compiled to WebAssembly as a second module (package
// wasm/checker) and run by wazero like the interpreter.
//
// A [Checker] checks a [Request]: the code, stubs declaring the names the
// host provides (tools.Registry.Stubs generates them from host function
// schemas, [Declarations] from a program's inputs), importable host
// modules, and limits. The [Result] lists typed [Diagnostic] values and the
// same diagnostics rendered in one of upstream's [Format]s. A [Context]
// carries what a REPL's or session's earlier snippets defined, so the next
// one is checked against them (package session keeps it in the stored
// state).
//
// The checker module is compiled once per machine and cached next to the
// interpreter's machine code (runtime.DefaultCacheDir); [New] compiles or
// loads it at once, [Lazy] at the first check, [Default] gives a
// process-wide one. A process that never checks never loads it. This
// package does not embed it: a program that checks on wazero imports
// github.com/monty-go/monty/runtime/typecheck/embedded, which does
// ([RegisterModule]), so that programs that use sessions (which import
// this package) but never check go without its 16.5 MB. Without it, or
// the translation below, a check fails with [ErrNoModule].
//
// A program that imports github.com/monty-go/monty/wasm/aot/checker runs
// the checker translated to Go ahead of time instead ([RegisterAOT]): no
// compilation and no cache, a first check in milliseconds. A check there
// cannot look at its context, so one that must stop (its time limit, its
// context cancelled) is stopped by taking its linear memory's access
// rights away: its next load or store faults, and the fault, turned into
// a panic (debug.SetPanicOnFault) on the goroutine running it, ends the
// check with the same errors as on wazero.
//
// A check runs in its own module instance, never the interpreter's: a
// crash of the checker ([ErrCheckerFailed]), a time or memory limit
// (runtime.ErrTimeLimit, runtime.ErrMemoryLimit) or cancellation ends that
// instance only, and the next check gets a fresh one.
package typecheck
