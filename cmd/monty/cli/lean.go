//go:build monty_lean

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/monty-go/monty/runtime"
)

// Built with the monty_lean tag (as the monty-go wheel's monty is), the
// command runs code, checks it, keeps sessions in a directory or in
// memory, and is pydantic-monty's worker; it neither listens nor
// connects: monty serve, monty mcp, --connect, OpenTelemetry export and
// the Redis and S3 stores are left out with their dependencies, so that a
// new worker starts sooner and the binary is smaller
// (docs/building.md#the-lean-build).

// build is what monty version says of this build.
const build = "lean"

// leftOut is the error for what, a command or flag this build leaves
// out, saying where to find it.
func leftOut(what string) error {
	return errors.New(what + " is not in this build of monty (the lean build, which the monty-go wheel carries): " +
		"use a release archive or the image, or go install github.com/monty-go/monty/cmd/monty")
}

// serveCommand is monty serve, which this build leaves out.
func serveCommand(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "monty:", leftOut("monty serve"))
	return ExitUsage
}

// mcpCommand is monty mcp, which this build leaves out.
func mcpCommand(_ context.Context, _ []string, _ io.Reader, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "monty:", leftOut("monty mcp"))
	return ExitUsage
}

// mcpServers are the MCP servers of --connect: none in this build.
type mcpServers struct{}

// connect has nothing to connect: servers refused every --connect.
func (c *connectFlags) connect(context.Context, []*mcpConnection, *slog.Logger) (*mcpServers, error) {
	return &mcpServers{}, nil
}

// connectExit is not reached: connect never fails in this build.
func connectExit(error) int { return ExitException }

// host is nil: there are no servers to offer.
func (*mcpServers) host() *runtime.Host { return nil }

// stubs is more: there are no namespaces to declare.
func (*mcpServers) stubs(more string) string { return more }

// Close does nothing: nothing was connected.
func (*mcpServers) Close() {}
