package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"

	"github.com/monty-go/monty/runtime"

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
	go func() { _, _ = workerEngine(ctx) }()
	w := protocol.NewWorker(protocol.WorkerOptions{NewEngine: workerEngine, Logger: logger})
	defer w.Close(context.WithoutCancel(ctx))
	conn := protocol.NewStreamConn(stdin, stdout, *maxFrame)
	if err := protocol.Serve(ctx, conn, w); err != nil {
		fmt.Fprintln(stderr, "monty subprocess:", err)
		return ExitException
	}
	return ExitOK
}

// theWorkerEngine is the engine of monty subprocess, made once.
var theWorkerEngine = sync.OnceValues(func() (*runtime.Engine, error) {
	h := &noticeHandler{w: os.Stderr}
	e, err := runtime.NewEngine(context.Background(), runtime.WithFastStart(), runtime.WithLogger(slog.New(h)))
	if err == nil && e.CompileInfo().FastStart && e.CompileInfo().CacheDir != "" {
		compileDetached()
	}
	return e, err
})

// workerEngine is the engine of monty subprocess. A pool gives a new
// worker a deadline for its first answers (pydantic-monty's
// request_timeout, 2 s in some clients) and kills it when it is late, so
// with no machine code cached the worker starts on wazero's interpreter
// engine at once (runtime.WithFastStart) and its first answers come in
// about a second, while the machine code is compiled in the background.
// That compilation must outlive a worker killed before it ends, or no
// worker would ever find the cache filled: monty precompile, started in a
// session of its own, compiles both modules into the cache; the worker's
// own compilation and it take turns on the cache entry's lock, so that the
// second finds the first's work done (or takes over from a killed one).
func workerEngine(context.Context) (*runtime.Engine, error) { return theWorkerEngine() }

// compileDetached starts monty precompile in a process that outlives this
// one, with this process's environment (so the same cache), and does not
// wait for it. Failing to start it only costs time: it is not reported.
func compileDetached() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(exe, "precompile")
	detach(cmd)
	if cmd.Start() == nil {
		_ = cmd.Process.Release()
	}
}
