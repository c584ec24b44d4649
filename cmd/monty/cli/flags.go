package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
)

// newFlagSet is the flag set of command name: errors go to stderr, and
// -h prints usage, then the flags.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs. When the command is not to go on (-h,
// or a flag the flag package refused and reported), ok is false and exit
// is its exit code.
func parseFlags(fs *flag.FlagSet, args []string) (exit int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return ExitOK, true
	case errors.Is(err, flag.ErrHelp):
		return ExitOK, false
	}
	return ExitUsage, false
}

// sandboxFlags are the flags of the commands that run code for the
// operator, monty (-c, FILE, the REPL) and monty mcp, that set up the
// sandbox: the limit flags, --type-check and --stubs, --mount, the
// --connect flags and --on-corrupt-state. addSandboxFlags registers
// them, worded for the command (sandboxHelp), and setup reads them.
type sandboxFlags struct {
	help      sandboxHelp
	limits    *limitFlags
	typeCheck *bool
	stubsFile *string
	mounts    *mountFlags
	connect   *connectFlags
	onCorrupt func() (bool, error)
}

// sandboxHelp is what differs between the commands' sandbox flags.
type sandboxHelp struct {
	limits limitProfile
	// typeCheck and stubs are the help of --type-check and --stubs.
	typeCheck, stubs string
	// stubsNeedTypeCheck refuses --stubs without --type-check.
	stubsNeedTypeCheck bool
	// corruptWhat and corruptWhere complete the help of
	// --on-corrupt-state (see corruptFlag).
	corruptWhat, corruptWhere string
}

// addSandboxFlags registers the sandbox flags on fs, worded as h says.
func addSandboxFlags(fs *flag.FlagSet, h sandboxHelp) *sandboxFlags {
	return &sandboxFlags{
		help:      h,
		limits:    addLimitFlags(fs, h.limits),
		typeCheck: fs.Bool("type-check", false, h.typeCheck),
		stubsFile: fs.String("stubs", "", h.stubs),
		mounts:    addMountFlags(fs),
		connect:   addConnectFlags(fs),
		onCorrupt: corruptFlag(fs, h.corruptWhat, h.corruptWhere),
	}
}

// sandbox is what the sandbox flags set up.
type sandbox struct {
	limits    runtime.Limits
	typeCheck bool
	// stubs is the text of --stubs ("" without it).
	stubs         string
	failOnCorrupt bool
	// conns are the --connect servers, not connected yet.
	conns []*mcpConnection
	// mounts are the --mount directories, opened (nil: none); the
	// caller closes them.
	mounts *vfs.MountTable
}

// setup checks the sandbox flags, reads --stubs and opens the mounts,
// refusing one at /work when sessionFiles says that the sessions' own
// files are there. Every error is a usage error.
func (f *sandboxFlags) setup(sessionFiles bool) (*sandbox, error) {
	sb := &sandbox{typeCheck: *f.typeCheck}
	var err error
	if sb.failOnCorrupt, err = f.onCorrupt(); err != nil {
		return nil, err
	}
	if sb.limits, err = f.limits.limits(); err != nil {
		return nil, err
	}
	if f.help.stubsNeedTypeCheck && *f.stubsFile != "" && !*f.typeCheck {
		return nil, errors.New("--stubs needs --type-check")
	}
	if sb.stubs, err = readStubs(*f.stubsFile); err != nil {
		return nil, err
	}
	if sb.conns, err = f.connect.servers(); err != nil {
		return nil, err
	}
	if sb.mounts, err = f.mounts.open(); err == nil && sessionFiles {
		err = refuseFilesMount(sb.mounts)
	}
	if err != nil {
		sb.mounts.Close()
		return nil, err
	}
	return sb, nil
}

// usageError is a configuration mistake (exit status 2).
type usageError struct{ error }

// refuseFilesMount refuses a mount at or below /work, where each session
// sees its own files: the mount would never be reached.
func refuseFilesMount(t *vfs.MountTable) error {
	for _, s := range t.Specs() {
		if s.Guest == session.FilesMount || strings.HasPrefix(s.Guest, session.FilesMount+"/") {
			return fmt.Errorf("--mount %s: %s is where each session's own files appear, in front of any mount; choose another guest path", s, session.FilesMount)
		}
	}
	return nil
}
