// Package tools is the Go host toolkit: Go functions and classes that
// Python code running in a session can call, described by schemas that
// a model reads and a type checker checks. It depends on runtime and
// object only; package agent builds the execute_python tool on it, and
// package mcpclient offers MCP servers' tools through the same Registry.
//
// A Function couples a Schema (name, description, parameters with types,
// defaults and descriptions, return description, category) with a Handler.
// Func adapts a plain Go function by reflection: an optional leading
// context.Context, then one Go parameter per schema parameter; Python
// arguments, positional or keyword, are bound to the parameters, checked
// and converted (a mismatch raises TypeError in Python, worded like
// CPython's), and the result is converted back. A Go error raises
// RuntimeError, or the Function's ErrorType, or the exact type of a
// *runtime.Exception; Python code catches it with try/except. Async
// functions run in their own goroutines and asyncio.gather runs several
// concurrently.
//
// A Registry holds functions; its Host offers them to a session together
// with list_functions() and help(name) for the model to discover them, and
// Tools exports each schema as a JSON-schema tool definition.
//
// Registry.Stubs feeds the type checker: it writes the registered
// functions and the two built-ins as a Python stub module (Function.Stub
// writes one), with parameter types, defaults, return types
// (Schema.ReturnType, which Func infers from the Go result) and async
// def for async functions. The checker star-imports it into the code it
// checks, so a call with an argument of the wrong type, a missing or
// unknown argument, or an async function's result used without await is
// reported before the code runs.
//
// Host classes (NewClass, Method) give Python objects whose attributes
// and methods are a Go value's; Registry.Object hands one to the code.
// A namespace (AddNamespace) is a global object whose methods are a
// service's operations, the way mcpclient offers an MCP server.
//
// A run that wants to see its host calls (package agent's events) gives
// its context an Observer (WithObserver).
//
// # Concurrency
//
// Registry is safe for concurrent use. Schema, Param, Function, Class,
// Tool and Catalog are plain values: safe to share between goroutines as
// long as nobody modifies them.
package tools
