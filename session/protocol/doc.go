// Package protocol speaks monty.v1, the worker protocol of upstream Monty
// (pydantic-monty's AsyncMonty and AsyncMontyWebsocket are its clients):
// Protobuf messages (package montypb, the schema of pydantic-monty 1.4.0)
// in length-prefixed frames, a parent's requests (Configure, Feed, the
// answers to suspensions, Dump, Load, Reset, Shutdown) and a worker's
// events (prints, suspensions, the turn-ending event).
//
// The pieces, each in a file of its own:
//
//   - Worker (worker.go) serves one session's requests over an
//     interpreter of its own: limits, OS policy, type checking with module
//     stubs, suspensions at the parent's functions, OS calls and futures,
//     and the pauses it answers itself (WorkerOptions.Host: a server's
//     mounts and MCP tools, and their approvals).
//   - Dumps (dump.go): the session as bytes (Snapshot, Load), or as a
//     header and a live REPL for a store that dumps the REPL itself (Live,
//     LoadLive: the monty.v1 server's sessions, session.Driven).
//   - Frames (frame.go) and Serve (serve.go): a Conn over a byte stream or
//     a pipe, and the request loop of `monty subprocess`.
//   - Values (values.go): Python values as the protocol's arenas.
//   - OS calls (oscall.go), print batching (print.go) and module stubs
//     (stubs.go) in their wire forms.
//
// Package server serves the protocol over WebSocket for `monty serve`,
// with API keys, stored sessions, profiles and drain.
package protocol
