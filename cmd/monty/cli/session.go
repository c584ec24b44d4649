package cli

import (
	"context"
	"errors"
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
	if spec == "" {
		d, err := defaultStoreDir()
		if err != nil {
			return nil, err
		}
		spec = d
	}
	st, err := storeurl.Open(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	return st, nil
}

// storeExit is the exit status for a store that cannot be opened: a usage
// error when the spec itself is wrong, else a runtime failure.
func storeExit(err error) int {
	if errors.Is(err, storeurl.ErrBadSpec) {
		return ExitUsage
	}
	return ExitException
}

// executeSession runs src in a stored session; output streams as usual.
func executeSession(ctx context.Context, id, storeSpec, src string, limits runtime.Limits, tc *session.TypeCheck, osh runtime.OSHandler, stdout, stderr io.Writer) int {
	st, err := openStore(ctx, storeSpec)
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		return storeExit(err)
	}
	defer st.Close()
	emit := func(stream runtime.Stream, text string) {
		if stream == runtime.Stderr {
			io.WriteString(stderr, text)
		} else {
			io.WriteString(stdout, text)
		}
	}
	engine, err := processEngine(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		return ExitException
	}
	s, err := session.Open(ctx, id, session.Options{Store: st, Engine: engine, Limits: limits, Print: emit, TypeCheck: tc, Host: hostFor(osh), Files: &session.Files{}})
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		if errors.Is(err, store.ErrInvalidID) {
			return ExitUsage
		}
		return ExitException
	}
	defer s.Close(ctx)
	if r := s.Restored(); r.FromJSON {
		fmt.Fprintf(stderr, "monty: session %s restored from its JSON view (%s); lost: %v\n", id, r.Reason, r.Lost)
	}
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
