package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/monty-go/monty/session/protocol"
)

const subprocessUsage = `usage: monty subprocess

Serves one monty.v1 session over stdin and stdout, as upstream Monty's
worker does: the worker that pydantic-monty's Monty and AsyncMonty pools
start (point them here with MONTY_BIN or binary_path=). Frames are a 4-byte
little-endian length and a protobuf message; stderr carries diagnostics
only. See docs/protocol.md.

flags:
`

// subprocessCommand is `monty subprocess`: a monty.v1 worker on stdio.
func subprocessCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("monty subprocess", subprocessUsage, stderr)
	maxFrame := fs.Int("max-frame", protocol.DefaultMaxFrame, "refuse request frames larger than `BYTES`")
	if exit, ok := parseFlags(fs, args); !ok {
		return exit
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "monty subprocess: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The engine loads while the worker already reads its first requests:
	// a pool that starts a spare worker and shuts it down at once gets its
	// answer without waiting for the load (pydantic-monty's event loop
	// must not outlive a worker's exit).
	go func() { _, _ = processEngine(ctx) }()
	w := protocol.NewWorker(protocol.WorkerOptions{NewEngine: processEngine, Logger: logger})
	defer w.Close(context.WithoutCancel(ctx))
	conn := protocol.NewStreamConn(stdin, stdout, *maxFrame)
	if err := protocol.Serve(ctx, conn, w); err != nil {
		fmt.Fprintln(stderr, "monty subprocess:", err)
		return ExitException
	}
	return ExitOK
}
