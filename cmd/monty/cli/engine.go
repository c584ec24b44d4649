package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/term"

	"github.com/monty-go/monty/runtime"
)

// cliEngine is the engine of the run, REPL and session commands: one per
// process, machine code cached in runtime.DefaultCacheDir.
var cliEngine struct {
	once sync.Once
	e    *runtime.Engine
	err  error
}

// processEngine returns the process's engine, compiling the module on first use.
// On a cache miss one line on stderr, when it is a terminal, says what is
// happening; problems with the cache are printed as warnings.
//
// The CLI compiles before running even on a cache miss, rather than
// starting on wazero's interpreter engine like serve and mcp: a script's
// run time is unknown in advance (a compute-bound one runs many times
// slower on the interpreter engine), and the process would still have to
// finish compiling before exiting to fill the cache for the next run.
func processEngine(ctx context.Context) (*runtime.Engine, error) {
	cliEngine.once.Do(func() {
		h := &noticeHandler{w: os.Stderr, terminal: isTerminal(os.Stderr)}
		cliEngine.e, cliEngine.err = runtime.NewEngine(context.WithoutCancel(ctx), runtime.WithLogger(slog.New(h)))
	})
	return cliEngine.e, cliEngine.err
}

// newInterpreter starts an interpreter on the process's engine, and
// returns both. When it cannot, it says why on stderr and the interpreter
// is nil.
func newInterpreter(ctx context.Context, stderr io.Writer) (*runtime.Engine, *runtime.Interpreter) {
	engine, err := processEngine(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		return nil, nil
	}
	it, err := engine.NewInterpreter(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		return nil, nil
	}
	return engine, it
}

// noticeLogger is the log of the run and REPL commands, as a
// noticeHandler writing to stderr.
func noticeLogger(stderr io.Writer) *slog.Logger {
	f, ok := stderr.(*os.File)
	return slog.New(&noticeHandler{w: stderr, terminal: ok && isTerminal(f)})
}

// noticeHandler turns log records into the CLI's plain "monty: …" lines:
// warnings, and on a terminal only the compile notice and the MCP servers
// connected.
type noticeHandler struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
}

func (h *noticeHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || (h.terminal && l >= slog.LevelInfo)
}

func (h *noticeHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	var line string
	switch {
	case r.Level >= slog.LevelWarn:
		line = fmt.Sprintf("monty: warning: %s", r.Message)
		if dir := attrs["cache_dir"]; dir != "" {
			line += " [" + dir + "]"
		}
		if server := attrs["server"]; server != "" {
			line += " [MCP server " + server + "]"
		}
		if err := attrs["error"]; err != "" {
			line += ": " + err
		}
	case attrs["event"] == "compile_start":
		what := "the Python interpreter"
		if attrs["module"] == "checker" {
			what = "the type checker"
		}
		line = "monty: compiling " + what + " for this machine; this happens once and takes several seconds"
		if dir := attrs["cache_dir"]; dir != "" {
			line += " (cached in " + dir + ")"
		}
	case r.Message == mcpConnected:
		line = fmt.Sprintf("monty: connected to the MCP server %s (%s tools)", attrs["server"], attrs["tools"])
	default:
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintln(h.w, line)
	return err
}

func (h *noticeHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *noticeHandler) WithGroup(string) slog.Handler      { return h }

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
