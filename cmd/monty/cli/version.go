package cli

import (
	"cmp"
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
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

const versionUsage = `usage: monty version

Prints the version of monty-go and of the Monty it runs, the engine of the
interpreter and of the type checker (aot: translated to Go ahead of time and
linked in; wazero: compiled to machine code at first use and cached), the
commit it was built from and the Go version.
`

// versionCommand is `monty version` (and `monty --version`). It starts no
// engine: a worker pool probing the binary pays nothing.
func versionCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("monty version", versionUsage, stderr)
	if exit, ok := parseFlags(fs, args); !ok {
		return exit
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "monty version: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
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
	version, commit = cmp.Or(version, "(devel)"), cmp.Or(commit, "unknown")
	engine := func(aot bool) string {
		if aot {
			return "aot"
		}
		return "wazero"
	}
	fmt.Fprintf(stdout, "monty-go %s\nmonty: %s\nengine: %s\ntype checker: %s\ncommit: %s\ngo: %s %s/%s\n",
		version, wasm.MontyVersion, engine(runtime.AOTLinked()), engine(typecheck.AOTLinked()),
		commit, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
	return ExitOK
}
