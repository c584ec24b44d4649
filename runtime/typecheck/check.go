package typecheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/monty-go/monty/runtime"
)

// DefaultPath is the file name diagnostics give a snippet checked without
// a Path.
const DefaultPath = "main.py"

// StubsPath is the file name of Request.Stubs inside the checker, which
// diagnostics about the stubs name (upstream Monty's name for a session's
// stubs, so that both report the same text); code may not use it as its
// own Path.
const StubsPath = "repl_type_stubs.pyi"

// Request is one snippet to check and what it is checked against.
type Request struct {
	// Code is the Python source.
	Code string
	// Path is the file name diagnostics show (default DefaultPath): a
	// plain name ending in ".py", without directories.
	Path string
	// Stubs is Python stub (.pyi) text whose names the code can use as if
	// defined before it, such as host function signatures
	// (tools.Registry.Stubs) and declarations of a program's inputs
	// (Declarations).
	Stubs string
	// Modules are host modules the code may import by name (`import
	// tools`), as stub text. Their names may not be ones the sandbox or the
	// checker provides itself (json, typing, builtins, ...).
	Modules []ModuleStub
	// Prelude is code that runs before Code, such as a session's earlier
	// snippets (Context.Apply sets it), after the names of Stubs are
	// imported: Code is checked with it, but problems inside it are not
	// reported, diagnostics keep Code's own line numbers, and what they say
	// of the prelude (where a function it defines is declared) they show in
	// the stubs file (StubsPath), after the stubs.
	Prelude string
	// Format chooses how Result.Text renders the diagnostics (default
	// Full).
	Format Format
	// Color adds ANSI colour to the Full and Concise formats.
	Color bool
	// Limits bound the check as they bound a run: MaxDuration its wall
	// time (ErrTimeLimit), MaxMemory the memory it may add to what the
	// checker keeps from earlier checks (ErrMemoryLimit), with 32 MiB of
	// headroom for the checker's own caches as upstream Monty allows; 0
	// or runtime.Unlimited is none. Other fields are ignored.
	Limits runtime.Limits
}

// ModuleStub is the stub text of a host module.
type ModuleStub struct {
	// Name is the dotted module name, such as "tools" or "tools.web".
	Name string
	// Source is its .pyi text.
	Source string
}

// Result is the outcome of a check that ran.
type Result struct {
	// Diagnostics are the problems found, in source order; none when the
	// code is clean.
	Diagnostics []Diagnostic
	// Text is the diagnostics rendered in the requested Format; "" when
	// the code is clean.
	Text string
}

// Clean reports whether the check found nothing.
func (r *Result) Clean() bool { return len(r.Diagnostics) == 0 }

// Err returns nil when the code is clean, else an *Error carrying the
// result.
func (r *Result) Err() error {
	if r.Clean() {
		return nil
	}
	return &Error{Result: r}
}

// Diagnostic is one problem the checker found.
type Diagnostic struct {
	// Path is the file the problem is in (the request's Path).
	Path string `json:"path"`
	// Line and Column are where it starts, EndLine and EndColumn where it
	// ends; all 1-based, columns in characters.
	Line      int `json:"line"`
	Column    int `json:"column"`
	EndLine   int `json:"end_line"`
	EndColumn int `json:"end_column"`
	// Rule is ty's rule name, such as "invalid-argument-type" or
	// "unresolved-reference" ("invalid-syntax" for a syntax error).
	Rule string `json:"rule"`
	// Severity is how serious it is.
	Severity Severity `json:"severity"`
	// Message says what is wrong, on one line.
	Message string `json:"message"`
}

// String renders the diagnostic on one line, like the Concise format.
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d:%d: %s[%s] %s", d.Path, d.Line, d.Column, d.Severity, d.Rule, d.Message)
}

// Severity is how serious a diagnostic is.
type Severity string

// Severities, from least to most serious.
const (
	SeverityInfo    Severity = "info"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
	SeverityFatal   Severity = "fatal"
)

// Format is how diagnostics are rendered as text, by the checker itself
// (the formats of ty and upstream Monty).
type Format string

// The formats. Full is the default.
const (
	// Full shows each diagnostic with the source lines around it and
	// carets under the problem.
	Full Format = "full"
	// Concise is one "path:line:col: severity[rule] message" line each.
	Concise Format = "concise"
	// Azure is Azure Pipelines logging commands.
	Azure Format = "azure"
	// JSON is a JSON array of diagnostic objects.
	JSON Format = "json"
	// JSONLines is one JSON diagnostic object per line.
	JSONLines Format = "jsonlines"
	// RDJSON is reviewdog's diagnostic JSON.
	RDJSON Format = "rdjson"
	// Pylint is pylint's line format.
	Pylint Format = "pylint"
	// GitLab is a GitLab Code Quality report.
	GitLab Format = "gitlab"
	// GitHub is GitHub Actions workflow commands.
	GitHub Format = "github"
)

// Formats lists every format.
var Formats = []Format{Full, Concise, Azure, JSON, JSONLines, RDJSON, Pylint, GitLab, GitHub}

// ParseFormat returns the format called name (case-insensitive;
// "json-lines" is JSONLines too), or an error matching
// runtime.ErrInvalidOption that lists the valid names.
func ParseFormat(name string) (Format, error) {
	n := strings.ToLower(name)
	if n == "json-lines" {
		return JSONLines, nil
	}
	for _, f := range Formats {
		if string(f) == n {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("%w: unknown type check format %q, expected one of: %s", runtime.ErrInvalidOption, name, strings.Join(names, ", "))
}

// ErrTypeErrors matches an *Error: the code has problems the checker found.
var ErrTypeErrors = errors.New("monty: the code has type errors")

// ErrCheckerFailed matches a *CheckerError: the checker itself failed.
var ErrCheckerFailed = errors.New("monty: the type checker failed")

// Error reports the diagnostics of code that did not pass the check; the
// surfaces that refuse to run such code return it. It matches
// ErrTypeErrors.
type Error struct {
	// Result is the check's result, with at least one diagnostic.
	Result *Result
}

func (e *Error) Error() string {
	n := len(e.Result.Diagnostics)
	s := "s"
	if n == 1 {
		s = ""
	}
	return fmt.Sprintf("type check found %d problem%s; nothing was run:\n%s", n, s, strings.TrimRight(e.Result.Text, "\n"))
}

// Is makes errors.Is(err, ErrTypeErrors) true.
func (e *Error) Is(target error) bool { return target == ErrTypeErrors }

// CheckerError reports that the checker could not check the code: it
// crashed (an internal error of ty or monty-type-checking) or refused the
// request. It matches ErrCheckerFailed; the checker stays usable.
type CheckerError struct {
	// Message is what the checker reported.
	Message string
}

func (e *CheckerError) Error() string { return "monty: type checker failed: " + e.Message }

// Is makes errors.Is(err, ErrCheckerFailed) true.
func (e *CheckerError) Is(target error) bool { return target == ErrCheckerFailed }

// gitlabDiagnostic is one element of the GitLab Code Quality JSON the
// module renders for the structured diagnostics.
type gitlabDiagnostic struct {
	CheckName   string `json:"check_name"`
	Description string `json:"description"`
	Severity    string `json:"severity"`
	Location    struct {
		Path      string `json:"path"`
		Positions struct {
			Begin struct {
				Line   int `json:"line"`
				Column int `json:"column"`
			} `json:"begin"`
			End struct {
				Line   int `json:"line"`
				Column int `json:"column"`
			} `json:"end"`
		} `json:"positions"`
	} `json:"location"`
}

// parseDiagnostics decodes the module's GitLab JSON.
func parseDiagnostics(data string) ([]Diagnostic, error) {
	var raw []gitlabDiagnostic
	if err := json.Unmarshal([]byte(data), &raw); err != nil {
		return nil, fmt.Errorf("decode diagnostics: %w", err)
	}
	out := make([]Diagnostic, len(raw))
	for i, g := range raw {
		sev := SeverityError
		switch g.Severity {
		case "info":
			sev = SeverityInfo
		case "minor":
			sev = SeverityWarning
		case "critical":
			sev = SeverityFatal
		}
		p := g.Location.Positions
		out[i] = Diagnostic{
			Path: g.Location.Path, Line: p.Begin.Line, Column: p.Begin.Column,
			EndLine: p.End.Line, EndColumn: p.End.Column,
			Rule: g.CheckName, Severity: sev,
			Message: strings.TrimPrefix(g.Description, g.CheckName+": "),
		}
	}
	return out, nil
}
