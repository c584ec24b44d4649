package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/storeurl"
)

const defaultStoreHint = "$XDG_DATA_HOME/monty-go/sessions or ~/.local/share/monty-go/sessions"

// storeFlagHelp describes the value of every command's --store. Any other
// SCHEME:… is refused (storeurl.ErrUnknownScheme), never taken for a
// directory.
const storeFlagHelp = "a directory (/path, or ./name:x for a relative name with a colon), file:///path, mem:, redis://…, s3://… or HOT,COLD; " +
	"any other SCHEME: is refused (default: " + defaultStoreHint + ")"

// defaultStoreDir is the per-user session directory.
func defaultStoreDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "monty-go", "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for the default session store (use --store DIR): %w", err)
	}
	return filepath.Join(home, ".local", "share", "monty-go", "sessions"), nil
}

// openStore opens the session store named by --store (a directory or a
// URL, see package storeurl); empty means the per-user default directory.
func openStore(ctx context.Context, spec string) (store.Store, error) {
	return openStoreWith(ctx, spec, storeurl.Options{})
}

// openStoreWith is openStore with settings for every backend (TTLs,
// archiving).
func openStoreWith(ctx context.Context, spec string, opts storeurl.Options) (store.Store, error) {
	if spec == "" {
		d, err := defaultStoreDir()
		if err != nil {
			return nil, err
		}
		spec = d
	}
	st, err := storeurl.OpenWith(ctx, spec, opts)
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	return st, nil
}

// storeExit is the exit status for a store that cannot be opened: a usage
// error when the spec itself is wrong or names a store this build leaves
// out, else a runtime failure.
func storeExit(err error) int {
	if errors.Is(err, storeurl.ErrBadSpec) || errors.Is(err, storeurl.ErrNotInThisBuild) {
		return ExitUsage
	}
	return ExitException
}

// Values of --on-corrupt-state.
const (
	corruptFresh = "fresh"
	corruptFail  = "fail"
)

// corruptFlag adds --on-corrupt-state to fs; the returned function reports
// whether it says to fail, or an error for a value that is neither.
func corruptFlag(fs *flag.FlagSet, what, where string) func() (fail bool, err error) {
	v := fs.String("on-corrupt-state", corruptFresh, "when "+what+"'s stored state cannot be loaded (damaged, of another format, signed with another key): "+
		"fresh keeps it aside and starts empty, saying so "+where+"; fail keeps it aside and fails")
	return func() (bool, error) {
		switch *v {
		case corruptFresh:
			return false, nil
		case corruptFail:
			return true, nil
		}
		return false, fmt.Errorf("--on-corrupt-state %q: use fresh or fail", *v)
	}
}

// reportRestore tells on stderr how session id was opened when it did not
// continue from its stored state as it was.
func reportRestore(stderr io.Writer, id string, r session.Restore) {
	switch {
	case r.QuarantinedAs != "":
		fmt.Fprintf(stderr, "monty: session %s: its stored state could not be loaded (%s); it was kept aside as %q and the session starts empty\n", id, r.Reason, r.QuarantinedAs)
	case r.FromJSON:
		fmt.Fprintf(stderr, "monty: session %s restored from its JSON view (%s); lost: %v\n", id, r.Reason, r.Lost)
	}
}

// openFailed reports why session id could not be opened and returns the
// exit code.
func openFailed(stderr io.Writer, id string, err error) int {
	var cse *session.CorruptStateError
	switch {
	case errors.As(err, &cse) && cse.KeepErr != nil:
		fmt.Fprintf(stderr, "monty: session %s: its stored state cannot be loaded (%v) and could not be kept aside: %v; it was left in place. Remove it with `monty session rm %s` (or move the damaged file away) to start the session empty\n",
			id, cse.Err, cse.KeepErr, id)
	case errors.As(err, &cse):
		fmt.Fprintf(stderr, "monty: session %s: its stored state cannot be loaded (%v); a copy was kept as %q and the original left in place. Run with --on-corrupt-state fresh to start the session empty, or remove it with `monty session rm %s`\n",
			id, cse.Err, cse.QuarantinedAs, id)
	default:
		fmt.Fprintln(stderr, "monty:", err)
	}
	if errors.Is(err, store.ErrInvalidID) {
		return ExitUsage
	}
	return ExitException
}

// executeSession runs src in the stored session cfg.sessionID; output
// streams as usual.
func executeSession(ctx context.Context, cfg runConfig, src string, stdout, stderr io.Writer) int {
	emit := func(stream runtime.Stream, text string) {
		if stream == runtime.Stderr {
			io.WriteString(stderr, text)
		} else {
			io.WriteString(stdout, text)
		}
	}
	s, code := openSession(ctx, cfg, emit, stderr)
	if s == nil {
		return code
	}
	defer s.Close(ctx)
	res, err := s.Exec(ctx, src)
	if errors.Is(err, typecheck.ErrTypeErrors) {
		return refuse(err, stderr)
	}
	if res != nil {
		if res.NotSavedReason != "" {
			fmt.Fprintln(stderr, "monty: state not saved:", res.NotSavedReason)
		}
		if res.Err != nil {
			return report(res.Err, stderr)
		}
	}
	return report(err, stderr)
}

// openSession opens the session of cfg, saying on stderr how it was
// restored; print receives its output (nil: collected in each Result).
// When it cannot be opened, the session is nil and the exit code says why.
func openSession(ctx context.Context, cfg runConfig, print runtime.PrintFunc, stderr io.Writer) (*session.Session, int) {
	engine, err := processEngine(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		return nil, ExitException
	}
	s, err := session.Open(ctx, cfg.sessionID, session.Options{Store: cfg.store, Engine: engine, Limits: cfg.limits, Print: print, TypeCheck: cfg.tc,
		Host: cfg.host, Files: &session.Files{}, FreshOnCorrupt: !cfg.failOnCorrupt})
	if err != nil {
		return nil, openFailed(stderr, cfg.sessionID, err)
	}
	reportRestore(stderr, cfg.sessionID, s.Restored())
	return s, ExitOK
}
