// Package cli implements the monty command. Run is the whole program, so
// tests call it directly.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	_ "github.com/monty-go/monty/runtime/typecheck/embedded" // checker.wasm, for type checks on wazero
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitException = 1
	ExitUsage     = 2
)

const usage = `usage: monty [flags] -c CODE
       monty [flags] FILE.py
       monty [flags]              (interactive)
       monty session ls | show ID | rm ID | export ID FILE | import ID FILE | files ID | cat ID PATH
       monty serve [flags]        (HTTP API; monty serve -h)
       monty mcp [flags]          (MCP server on stdio; monty mcp -h)
       monty check [flags] FILE.py...  (type-check only; monty check -h)
       monty subprocess           (a monty.v1 worker on stdio for pydantic-monty)
       monty precompile [--cache-dir DIR]
       monty version              (versions, and the engines linked in)

Runs Python code in Monty's sandbox. print() output goes to stdout as it is
produced; an uncaught exception prints a traceback to stderr and exits 1.

The first run on a machine compiles the interpreter to machine code (several
seconds) and caches it in $MONTY_CACHE_DIR, by default monty-go/compiled in
the user cache directory (~/.cache on Linux); MONTY_CACHE_DIR=off disables
the cache.

flags:
`

// Run executes the command line args and returns the exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "session" {
		return sessionCommand(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "serve" {
		return serveCommand(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "mcp" {
		return mcpCommand(ctx, args[1:], stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "check" {
		return checkCommand(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "subprocess" {
		return subprocessCommand(ctx, args[1:], stdin, stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version") {
		return versionCommand(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "precompile" {
		return precompileCommand(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet("monty", usage, stderr)
	code := fs.String("c", "", "run `CODE` (a program passed as a string)")
	sessionID := fs.String("session", "", "keep Python state between runs in session `ID` (functions, classes and data survive)")
	storeSpec := fs.String("store", "", "with --session: the session store `SPEC`: "+storeFlagHelp)
	flags := addSandboxFlags(fs, sandboxHelp{
		limits:             runLimits,
		typeCheck:          "type-check the code first and refuse to run it when the check finds problems (a REPL or session checks each snippet against the earlier ones)",
		stubs:              "with --type-check: stub (.pyi) `FILE` declaring names the code may use as defined",
		stubsNeedTypeCheck: true,
		corruptWhat:        "a --session",
		corruptWhere:       "on stderr",
	})
	if exit, ok := parseFlags(fs, args); !ok {
		return exit
	}
	src, name, err := source(fs, *code)
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		fs.Usage()
		return ExitUsage
	}
	sb, err := flags.setup(*sessionID != "") // a session's own files are at /work
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		return ExitUsage
	}
	defer sb.mounts.Close()
	cfg := runConfig{sessionID: *sessionID, failOnCorrupt: sb.failOnCorrupt, limits: sb.limits,
		host: &runtime.Host{OS: osHandler(sb.mounts)}}
	if *sessionID != "" {
		// Opened before anything is compiled: a wrong spec fails at once.
		if cfg.store, err = openStore(ctx, *storeSpec); err != nil {
			fmt.Fprintln(stderr, "monty:", err)
			return storeExit(err)
		}
		defer cfg.store.Close()
	}
	// The code calls the servers' tools through the host of a registry
	// offering them.
	servers, err := flags.connect.connect(ctx, sb.conns, noticeLogger(stderr))
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		return connectExit(err)
	}
	defer servers.Close()
	if h := servers.host(); h != nil {
		h.OS = cfg.host.OS
		cfg.host = h
	}
	if sb.typeCheck {
		if cfg.tc, err = typeCheckConfig(ctx, servers.stubs(sb.stubs)); err != nil {
			fmt.Fprintln(stderr, "monty:", err)
			return ExitException
		}
	}
	switch {
	case src == "" && name == "":
		return interactive(ctx, cfg, stdin, stdout, stderr)
	case *sessionID != "":
		return executeSession(ctx, cfg, src, stdout, stderr)
	}
	return execute(ctx, cfg, src, name, stdout, stderr)
}

// runConfig is how monty runs code (-c, FILE, the REPL), from its flags.
type runConfig struct {
	limits runtime.Limits
	// host serves the code's OS calls (the mounts) and the tools of the
	// --connect servers, and bounds its host calls.
	host *runtime.Host
	// tc type-checks the code before it runs; nil: no check.
	tc *session.TypeCheck
	// sessionID is the --session (empty: none), kept in store.
	sessionID     string
	store         store.Store
	failOnCorrupt bool
}

// mountFlags are the --mount flags of a command: host directories the
// operator puts in the sandbox. The code only ever names guest paths.
type mountFlags struct {
	specs       []string
	writeLimit  string
	memoryLimit string
}

func addMountFlags(fs *flag.FlagSet) *mountFlags {
	m := &mountFlags{}
	fs.Func("mount", "mount host directory HOST at GUEST in the sandbox, `HOST:GUEST[:ro|rw|overlay]`: ro (the default) reads, rw also writes to HOST, overlay keeps every change in memory and never changes HOST (repeatable; see docs/mounts.md)", func(s string) error {
		m.specs = append(m.specs, s)
		return nil
	})
	fs.StringVar(&m.writeLimit, "mount-write-limit", "", "with --mount: most bytes the code may write through each rw or overlay mount, e.g. 10MB (empty: no limit)")
	fs.StringVar(&m.memoryLimit, "mount-memory", "", "with --mount: each mount's memory budget: what an overlay keeps in memory, and the largest file read, e.g. 100MB (empty: 50MB)")
	return m
}

// open opens the mounts; without --mount it returns a nil table, which
// serves nothing. Every error is the operator's to fix (a usage error).
func (m *mountFlags) open() (*vfs.MountTable, error) {
	if m == nil {
		return nil, nil
	}
	if len(m.specs) == 0 {
		if m.writeLimit != "" || m.memoryLimit != "" {
			return nil, errors.New("--mount-write-limit and --mount-memory need --mount")
		}
		return nil, nil
	}
	var limits [2]int64
	for i, f := range []struct{ name, val string }{{"--mount-write-limit", m.writeLimit}, {"--mount-memory", m.memoryLimit}} {
		n, err := parseBytes(f.val)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f.name, err)
		}
		limits[i] = n
	}
	specs := make([]vfs.MountSpec, len(m.specs))
	for i, s := range m.specs {
		spec, err := vfs.ParseMount(s)
		if err != nil {
			return nil, fmt.Errorf("--mount: %s", strings.TrimPrefix(err.Error(), runtime.ErrInvalidOption.Error()+": "))
		}
		if spec.WriteLimit == 0 {
			spec.WriteLimit = limits[0]
		}
		spec.MemoryLimit = limits[1]
		specs[i] = spec
	}
	t, err := vfs.OpenMounts(specs...)
	if err != nil {
		return nil, fmt.Errorf("--mount: %s", strings.TrimPrefix(err.Error(), runtime.ErrInvalidOption.Error()+": "))
	}
	return t, nil
}

// osHandler is the table as a Host's OS handler: nil without mounts.
func osHandler(t *vfs.MountTable) runtime.OSHandler {
	if t == nil {
		return nil
	}
	return t
}

// source returns the program text and its script name from -c or a file.
func source(fs *flag.FlagSet, code string) (string, string, error) {
	switch {
	case code != "" && fs.NArg() > 0:
		return "", "", errors.New("give either -c CODE or FILE, not both")
	case code != "":
		return code, "<string>", nil
	case fs.NArg() == 1:
		b, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return "", "", err
		}
		return string(b), filepath.Base(fs.Arg(0)), nil
	case fs.NArg() > 1:
		return "", "", errors.New("only one FILE can be run")
	}
	return "", "", nil // interactive
}

// execute runs src, the script called name, without a session.
func execute(ctx context.Context, cfg runConfig, src, name string, stdout, stderr io.Writer) int {
	if tc := cfg.tc; tc != nil {
		res, err := tc.Checker.Check(ctx, typecheck.Request{Code: src, Path: checkPath(name), Stubs: tc.Stubs, Format: tc.Format, Limits: cfg.limits})
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			return refuse(err, stderr)
		}
	}
	_, it := newInterpreter(ctx, stderr)
	if it == nil {
		return ExitException
	}
	defer it.Close(ctx)
	it.SetLimits(cfg.limits)
	it.SetOutput(stdout, stderr)
	prog, err := it.Compile(ctx, src, runtime.WithScriptName(name))
	if err == nil {
		_, err = cfg.host.Run(ctx, prog)
	}
	return report(err, stderr)
}

// report prints err like Python would and returns the exit code.
func report(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var pyErr *runtime.Error
	if errors.As(err, &pyErr) {
		text := pyErr.Text
		if text == "" {
			text = pyErr.Error()
		}
		fmt.Fprintln(stderr, strings.TrimRight(text, "\n"))
		return ExitException
	}
	if errors.Is(err, runtime.ErrCancelled) {
		fmt.Fprintln(stderr, "KeyboardInterrupt")
		return 130
	}
	if line, ok := runtime.LimitLine(err); ok {
		fmt.Fprintln(stderr, line)
		return ExitException
	}
	fmt.Fprintln(stderr, "monty:", err)
	return ExitException
}

// parseBytes reads sizes like "64MB", "1GiB", "1048576".
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(s), strings.ToUpper(u.suffix)) {
			s, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || !(n > 0) { // NaN too
		return 0, fmt.Errorf("%q is not a positive size (examples: 64MB, 1GiB)", s)
	}
	if n*float64(mult) >= 1<<62 {
		return 0, fmt.Errorf("%q is too large a size (the largest is 4 EiB)", s)
	}
	return int64(n * float64(mult)), nil
}
