// Package session keeps Python REPLs whose state outlives the process: the
// globals, functions, classes and instances one call leaves are there for
// the next, in this process or another, after a restart or on another
// machine.
//
// A [Session] is one REPL, opened by id with [Open] from a store (see
// package session/store: memory, a directory, Redis, S3, or a tiered
// combination). [Session.Exec] runs code and stores the state it leaves
// (the interpreter's full dump beside a JSON view of the public globals,
// docs/state-format.md) under a compare-and-set on the version it was
// loaded at, and returns a [Result]: the value, the output, a Python
// exception, and what was stored. A call that fails or cannot be stored
// leaves the session as it was before, and so, by default, does one that
// raises ([Options.CaptureOnError]). [Open] reports in a
// [Restore] how it found the state: none, the dump, only the JSON view
// (another Monty version wrote it), or a damaged state kept aside
// ([CorruptStateError], [Options.FreshOnCorrupt]).
//
// [Options] add to a session: signed state ([Options.SigningKey]), limits,
// host functions ([Options.Host]), files under /work saved with the state
// ([Files]), type checking before code runs ([TypeCheck]), and telemetry.
// [ListFiles], [ReadFile], [WriteFile] and [RemoveFile] change the files
// of a stored session without an interpreter; [Inspect] describes a stored
// blob.
//
// Code may call client tools ([ExecOptions.Tools]): functions the
// session's caller answers. A call stops the run, which is stored paused,
// dump and all ([Result.Paused], [Paused]); [Session.Resume] answers its
// calls ([ToolResult]) and continues it, here or in another process, until
// it expires ([DefaultRunTTL]).
//
// A [Manager] keeps live sessions by id for a server: it opens them
// lazily, keeps at most a number of them open, closes idle ones, and warms
// interpreters in advance.
//
// Concurrency: a Session runs one call at a time. A call made while
// another runs fails at once with [ErrBusy] (it never waits, and calls
// never interleave); the readers ([Session.State], [Session.Globals],
// [Session.Files], [Session.Paused], ...) wait for a running call to end.
// Several Sessions of one id, in one process or many, may share a store:
// the compare-and-set makes the second of two racing saves fail with
// store.ErrConflict, and the loser reloads the winner's state. A Manager
// is safe for concurrent use.
package session
