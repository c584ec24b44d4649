// Package mcpclient is code mode: it connects to MCP servers as a client
// and offers each server's tools to Python as the async methods of a
// namespace object, so that the code a model writes calls them, awaits
// several at once with asyncio.gather, and keeps only what it needs of
// their results. Add is the one entry point: it adds a Server to a
// tools.Registry, whose Host then carries the namespace into every
// session made from it.
//
// A tool whose calls need a person's approval (Server.Approve, or a
// destructiveHint) is offered as a method that pauses the run; package
// agent answers such pauses (agent.Approve).
// Server.Allow, Deny and Approve name tools by their MCP names or their
// Python names alike, and a name that is no tool of the server fails Add
// (ErrUnknownTool), so that a mistyped gate cannot silently gate nothing.
//
// Calls report progress and log messages to the run's tools.Observer and,
// in a traced run, are client spans whose trace context travels in the
// request's _meta (package telemetry).
//
// # Concurrency
//
// Namespace is safe for concurrent use; Server is a plain value, and an
// UnknownToolError is not modified once returned.
package mcpclient
