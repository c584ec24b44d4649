package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session"
)

const checkUsage = `usage: monty check [flags] FILE.py...
       monty check [flags] -c CODE

Type-checks Python code the way Monty runs it (ty's analysis against the part
of the standard library Monty implements) without running it. Prints the
diagnostics and exits 1 when there are any, 0 when the code is clean.

The first check on a machine compiles the type checker (several seconds) and
caches it next to the interpreter ($MONTY_CACHE_DIR).

flags:
`

// cliChecker is the type checker of the check command and of --type-check:
// one per process, compiled on first use.
var cliChecker struct {
	once sync.Once
	c    *typecheck.Checker
	err  error
}

// processChecker returns the process's type checker; like processEngine it
// says on a terminal when it compiles.
func processChecker(ctx context.Context) (*typecheck.Checker, error) {
	cliChecker.once.Do(func() {
		h := &noticeHandler{w: os.Stderr, terminal: isTerminal(os.Stderr)}
		cliChecker.c, cliChecker.err = typecheck.New(context.WithoutCancel(ctx), typecheck.WithLogger(slog.New(h)))
	})
	return cliChecker.c, cliChecker.err
}

// checkCommand implements `monty check`.
func checkCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("monty check", checkUsage, stderr)
	code := fs.String("c", "", "check `CODE` (a program passed as a string)")
	format := fs.String("format", "full", "diagnostics format: "+formatNames())
	stubsFile := fs.String("stubs", "", "stub (.pyi) `FILE` declaring names the code may use as defined")
	maxDuration := fs.Duration("max-duration", 0, "stop a check after this much wall-clock time (0: no limit)")
	maxMemory := fs.String("max-memory", "", "limit the memory one check may allocate, e.g. 256MB (empty: no limit)")
	if exit, ok := parseFlags(fs, args); !ok {
		return exit
	}
	f, err := typecheck.ParseFormat(*format)
	if err != nil {
		fmt.Fprintln(stderr, "monty check: --format:", err)
		return ExitUsage
	}
	stubs, err := readStubs(*stubsFile)
	if err != nil {
		fmt.Fprintln(stderr, "monty check:", err)
		return ExitUsage
	}
	mem, err := parseBytes(*maxMemory)
	if err != nil {
		fmt.Fprintf(stderr, "monty check: --max-memory: %v\n", err)
		return ExitUsage
	}
	type input struct{ code, path string }
	var inputs []input
	switch {
	case *code != "" && fs.NArg() > 0:
		fmt.Fprintln(stderr, "monty check: give either -c CODE or FILEs, not both")
		return ExitUsage
	case *code != "":
		inputs = append(inputs, input{*code, typecheck.DefaultPath})
	case fs.NArg() == 0:
		fs.Usage()
		return ExitUsage
	}
	for _, name := range fs.Args() {
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(stderr, "monty check:", err)
			return ExitUsage
		}
		inputs = append(inputs, input{string(b), checkPath(name)})
	}
	checker, err := processChecker(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "monty check:", err)
		return ExitException
	}
	exit := ExitOK
	for _, in := range inputs {
		res, err := checker.Check(ctx, typecheck.Request{
			Code: in.code, Path: in.path, Stubs: stubs, Format: f,
			Color:  (f == typecheck.Full || f == typecheck.Concise) && isTerminalWriter(stdout),
			Limits: runtime.Limits{MaxDuration: *maxDuration, MaxMemory: mem},
		})
		if err != nil {
			fmt.Fprintf(stderr, "monty check: %s: %v\n", in.path, err)
			return ExitException
		}
		if !res.Clean() {
			fmt.Fprint(stdout, ensureNewline(res.Text))
			exit = ExitException
		}
	}
	return exit
}

// checkPath is the name diagnostics give a file: its base name when that
// ends in .py, else DefaultPath.
func checkPath(name string) string {
	base := filepath.Base(name)
	if strings.HasSuffix(base, ".py") && len(base) > len(".py") {
		return base
	}
	return typecheck.DefaultPath
}

// readStubs reads --stubs (empty: no stubs).
func readStubs(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("--stubs: %w", err)
	}
	return string(b), nil
}

func formatNames() string {
	names := make([]string, len(typecheck.Formats))
	for i, f := range typecheck.Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

func ensureNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// isTerminalWriter reports whether w is a terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// typeCheckConfig is the session type checking of --type-check: the
// process's checker and the --stubs text.
func typeCheckConfig(ctx context.Context, stubs string) (*session.TypeCheck, error) {
	checker, err := processChecker(ctx)
	if err != nil {
		return nil, err
	}
	return &session.TypeCheck{Checker: checker, Stubs: stubs, Format: typecheck.Full}, nil
}

// refuse reports a failed check of code about to run: the diagnostics
// (or the checker's error) on stderr, exit status 1.
func refuse(err error, stderr io.Writer) int {
	var tcErr *typecheck.Error
	if errors.As(err, &tcErr) {
		fmt.Fprint(stderr, ensureNewline(tcErr.Result.Text))
		fmt.Fprintln(stderr, "monty: type check failed; nothing was run")
		return ExitException
	}
	fmt.Fprintln(stderr, "monty: type check:", err)
	return ExitException
}
