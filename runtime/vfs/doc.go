// Package vfs has the file systems a sandbox's code sees: each is a
// runtime.OSHandler serving the file operations of Python's open, pathlib
// and os under a virtual directory, with the semantics (and the errors,
// type and message) of Monty's own mounts.
//
//   - [MemFS] keeps files in memory (a session's /work), within
//     [MemFSLimits].
//   - [DirFS] serves a host directory, read-only or read-write, confined
//     to it (no symlink, "..", device or FIFO leads out), with a write
//     limit.
//   - [OverlayFS] is copy-on-write over a host directory that never
//     changes: writes stay in memory, within a memory budget.
//   - [ParseMount] reads HOST:GUEST[:ro|rw|overlay] into a [MountSpec],
//     and [OpenMounts] opens several into a [MountTable], which routes
//     each operation to the mount under its path.
//
// Each type says whether it is safe for concurrent use. The guest-facing
// interface (runtime.OSHandler, runtime.OSCall, runtime.Host) stays in
// package runtime: the interpreter needs none of this package, and a
// program that serves no files does not link it.
package vfs
