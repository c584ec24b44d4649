package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
)

// lineReader reads one line of input with a prompt.
type lineReader interface {
	ReadLine(prompt string) (string, error)
}

// plainReader reads lines from a non-terminal (pipes, tests), echoing
// prompts to out.
type plainReader struct {
	in  *bufio.Reader
	out io.Writer
}

func (p *plainReader) ReadLine(prompt string) (string, error) {
	fmt.Fprint(p.out, prompt)
	line, err := p.in.ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// termReader edits lines on a terminal, with history.
type termReader struct{ t *term.Terminal }

func (r *termReader) ReadLine(prompt string) (string, error) {
	r.t.SetPrompt(prompt)
	return r.t.ReadLine()
}

// feeder runs one snippet and returns its value, output and Python error.
type feeder func(ctx context.Context, code string) (object.Value, string, *runtime.Error, error)

// interactive runs the read-eval-print loop until end of input.
func interactive(ctx context.Context, cfg runConfig, stdin io.Reader, stdout, stderr io.Writer) int {
	engine, it := newInterpreter(ctx, stderr)
	if it == nil {
		return ExitException
	}
	defer it.Close(ctx)

	var feed feeder
	if cfg.sessionID != "" {
		s, code := openSession(ctx, cfg, nil, stderr)
		if s == nil {
			return code
		}
		defer s.Close(ctx)
		feed = func(ctx context.Context, code string) (object.Value, string, *runtime.Error, error) {
			res, err := s.Exec(ctx, code)
			if res == nil {
				return nil, "", nil, err
			}
			return res.Value, res.Output, res.Err, err
		}
	} else {
		it.SetLimits(cfg.limits)
		repl, err := it.NewREPL(ctx, runtime.WithScriptName("<stdin>"))
		if err != nil {
			fmt.Fprintln(stderr, "monty:", err)
			return ExitException
		}
		var tcContext typecheck.Context // what earlier snippets defined
		feed = func(ctx context.Context, code string) (object.Value, string, *runtime.Error, error) {
			var checked *typecheck.Result
			if tc := cfg.tc; tc != nil {
				req := typecheck.Request{Code: code, Stubs: tc.Stubs, Format: tc.Format, Limits: cfg.limits}
				tcContext.Apply(&req)
				res, err := tc.Checker.Check(ctx, req)
				if err == nil {
					err = res.Err()
				}
				if err != nil {
					return nil, "", nil, err
				}
				checked = res
			}
			v, err := cfg.host.Feed(ctx, repl, code)
			var pyErr *runtime.Error
			if errors.As(err, &pyErr) {
				return nil, it.Output(), pyErr, nil
			}
			if err == nil && checked != nil {
				tcContext.Commit(code)
			}
			return v, it.Output(), nil, err
		}
	}

	var lines lineReader = &plainReader{in: bufio.NewReader(stdin), out: stdout}
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		state, err := term.MakeRaw(int(f.Fd()))
		if err == nil {
			defer term.Restore(int(f.Fd()), state)
			t := term.NewTerminal(struct {
				io.Reader
				io.Writer
			}{f, stdout}, ">>> ")
			lines, stdout, stderr = &termReader{t}, t, t
		}
	}
	fmt.Fprintf(stdout, "Monty %s (monty-go); Ctrl-D to exit\n", engine.MontyVersion())
	for {
		code, err := readSnippet(ctx, it, lines)
		if err != nil {
			fmt.Fprintln(stdout)
			return ExitOK
		}
		if strings.TrimSpace(code) == "" {
			continue
		}
		v, out, pyErr, err := feed(ctx, code)
		fmt.Fprint(stdout, out)
		line, limit := runtime.LimitLine(err)
		var tcErr *typecheck.Error
		switch {
		case errors.As(err, &tcErr):
			fmt.Fprint(stderr, ensureNewline(tcErr.Result.Text))
		case limit:
			// The code ran into a limit the host enforces: shown like the
			// exceptions Python raises for its own limits.
			fmt.Fprintln(stderr, line)
		case err != nil:
			fmt.Fprintln(stderr, "monty:", err)
		case pyErr != nil:
			fmt.Fprintln(stderr, strings.TrimRight(pyErr.Text, "\n"))
		case v != nil && v.Kind() != object.KindNone:
			fmt.Fprintln(stdout, object.Repr(v))
		}
	}
}

// readSnippet reads lines until Monty's parser says the snippet is complete:
// open brackets and strings continue; a block continues until a blank line.
func readSnippet(ctx context.Context, it *runtime.Interpreter, lines lineReader) (string, error) {
	var buf []string
	prompt := ">>> "
	for {
		line, err := lines.ReadLine(prompt)
		if err != nil {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				return strings.Join(buf, "\n"), nil
			}
			return "", err
		}
		buf = append(buf, line)
		code := strings.Join(buf, "\n")
		mode, err := it.Continuation(ctx, code)
		if err != nil {
			return code, nil
		}
		switch {
		case mode == runtime.Complete && (len(buf) == 1 || strings.TrimSpace(line) == "" || !strings.HasSuffix(buf[0], ":")):
			return code, nil
		case mode == runtime.IncompleteBlock && strings.TrimSpace(line) == "" && len(buf) > 1:
			return code, nil
		}
		prompt = "... "
	}
}
