package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session/protocol"
	"github.com/monty-go/monty/wasm"
)

// Version is monty-go's version as releases stamp it
// (-ldflags '-X github.com/monty-go/monty/cmd/monty/cli.Version=v0.3.0');
// when empty, the main module's version from the build information.
var Version string

// Commit is the commit monty-go was built from as releases stamp it (-X
// …/cli.Commit=…); when empty, the build information's vcs.revision (Go
// records it unless -buildvcs=false).
var Commit string

const versionUsage = `usage: monty version [--json]

Prints the version of monty-go and of the Monty it runs, the engine of the
interpreter and of the type checker (aot: translated to Go ahead of time and
linked in; wazero: compiled to machine code at first use and cached), the
monty.v1 protocol versions it speaks (the worker protocol of pydantic-monty
and the WebSocket subprotocol of monty serve), the commit it was built from
and the Go version. --json prints the same as one JSON object.

flags:
`

// buildAbout is what monty version prints and what monty serve answers at
// GET /.
type buildAbout struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Monty   string `json:"monty"`
	Engine  string `json:"engine"`
	// Build is "full", or "lean" for a build with the monty_lean tag
	// (no monty serve, monty mcp, --connect, OTLP export, Redis or S3).
	Build       string `json:"build"`
	TypeChecker string `json:"type_checker"`
	// Protocol is monty.v1's version (protocol.Version); older peers down
	// to MinProtocol are served too.
	Protocol    int    `json:"protocol_version"`
	MinProtocol int    `json:"min_protocol_version"`
	Commit      string `json:"commit"`
	Go          string `json:"go"`
	Platform    string `json:"platform"`
}

// about describes this binary. It starts no engine: a worker pool probing
// the binary, or a liveness probe, pays nothing.
func about() buildAbout {
	version, commit := Version, Commit
	if bi, ok := debug.ReadBuildInfo(); ok && (version == "" || commit == "") {
		if version == "" {
			version = bi.Main.Version
		}
		if commit == "" {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if commit != "" && modified {
				commit += " (modified)"
			}
		}
	}
	engine := func(aot bool) string {
		if aot {
			return "aot"
		}
		return "wazero"
	}
	return buildAbout{
		Name:        "monty-go",
		Version:     cmp.Or(version, "(devel)"),
		Monty:       wasm.MontyVersion,
		Engine:      engine(runtime.AOTLinked()),
		Build:       build,
		TypeChecker: engine(typecheck.AOTLinked()),
		Protocol:    protocol.Version,
		MinProtocol: protocol.MinVersion,
		Commit:      cmp.Or(commit, "unknown"),
		Go:          goruntime.Version(),
		Platform:    goruntime.GOOS + "/" + goruntime.GOARCH,
	}
}

// versionCommand is `monty version` (and `monty --version`).
func versionCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("monty version", versionUsage, stderr)
	asJSON := fs.Bool("json", false, "print one JSON object (name, version, monty, engine, build, type_checker, protocol_version, min_protocol_version, commit, go, platform)")
	if exit, ok := parseFlags(fs, args); !ok {
		return exit
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "monty version: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	a := about()
	if *asJSON {
		out, err := json.MarshalIndent(a, "", "  ")
		if err != nil {
			fmt.Fprintln(stderr, "monty version:", err)
			return ExitException
		}
		fmt.Fprintf(stdout, "%s\n", out)
		return ExitOK
	}
	fmt.Fprintf(stdout, "%s %s\nmonty: %s\nengine: %s\nbuild: %s\ntype checker: %s\nprotocol: monty.v1 version %d (serves %d-%d)\ncommit: %s\ngo: %s %s\n",
		a.Name, a.Version, a.Monty, a.Engine, a.Build, a.TypeChecker, a.Protocol, a.MinProtocol, a.Protocol, a.Commit, a.Go, a.Platform)
	return ExitOK
}
