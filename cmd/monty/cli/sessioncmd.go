package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
)

const sessionUsage = `usage: monty session [--store SPEC] ls
       monty session [--store SPEC] show ID
       monty session [--store SPEC] rm ID
       monty session [--store SPEC] export ID FILE
       monty session [--store SPEC] import ID FILE
       monty session [--store SPEC] files ID
       monty session [--store SPEC] cat ID PATH
`

// sessionCommand implements `monty session ...`.
func sessionCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("monty session", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sessionUsage) }
	storeSpec := fs.String("store", "", "the session store `SPEC`: "+storeFlagHelp)
	if exit, ok := parseFlags(fs, args); !ok {
		return exit
	}
	want := map[string]int{"ls": 0, "show": 1, "rm": 1, "export": 2, "import": 2, "files": 1, "cat": 2}
	rest := fs.Args()
	if len(rest) == 0 || want[rest[0]] != len(rest)-1 || (rest[0] != "ls" && want[rest[0]] == 0) {
		fs.Usage()
		return ExitUsage
	}
	st, err := openStore(ctx, *storeSpec)
	if err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		return storeExit(err)
	}
	defer st.Close()
	if err := runSessionCommand(ctx, st, rest, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "monty:", err)
		if errors.Is(err, store.ErrInvalidID) || errors.Is(err, iofs.ErrInvalid) {
			return ExitUsage
		}
		return ExitException
	}
	return ExitOK
}

// readFilesOptions read a session's files from st without a signing key
// (as show does) and with limits far above the defaults: a session written
// by a server with larger file limits is still readable here.
func readFilesOptions(st store.Store) session.Options {
	return session.Options{Store: st, MaxStateSize: 1 << 30, Files: &session.Files{MaxBytes: 1 << 30, MaxEntries: 1 << 20}}
}

// runSessionCommand runs one session subcommand on st.
//
// ls lists the sessions it can read. Entries the store cannot read (a
// corrupt file, a foreign key under the Redis prefix, an object without
// metadata) are left out and reported on stderr, one line each starting
// with "monty: warning: skipping", and ls still exits 0: every session
// that can be used is listed, and the damaged ones can neither be shown
// nor resumed anyway (they are named so that they can be removed). Only a
// store that cannot be listed at all (unreachable, missing directory)
// makes ls fail.
//
// files lists a session's files under /work (path, size, modified); cat
// writes one of them, PATH relative to /work, to stdout as it is.
func runSessionCommand(ctx context.Context, st store.Store, args []string, stdout, stderr io.Writer) error {
	switch args[0] {
	case "ls":
		infos, err := st.List(ctx)
		skipped, err := store.SplitListError(err)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSIZE\tMODIFIED")
		for _, in := range infos {
			if store.IsLease(in.ID) {
				continue // a server's claim on a session, not a session
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", in.ID, in.Size, in.Modified.Local().Format(time.DateTime))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, sk := range skipped {
			fmt.Fprintf(stderr, "monty: warning: skipping %s: %v\n", sk.Name(), sk.Err)
		}
		return nil
	case "show":
		obj, err := st.Get(ctx, args[1])
		if err != nil {
			return err
		}
		in, err := session.Inspect(obj.Data, nil)
		if err != nil {
			return err
		}
		var view bytes.Buffer
		if err := json.Indent(&view, in.JSON, "  ", "  "); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "id:       %s\nsize:     %d bytes\nsha256:   %s\nmodified: %s\nmonty:    %s\nglobals:  %s\nstate:    %s\n",
			obj.Info.ID, obj.Info.Size, obj.Info.SHA256, obj.Info.Modified.Local().Format(time.DateTime),
			in.MontyVersion, strings.Join(in.Globals, ", "), view.String())
		return nil
	case "rm":
		return st.Delete(ctx, args[1])
	case "export":
		obj, err := st.Get(ctx, args[1])
		if err != nil {
			return err
		}
		return os.WriteFile(args[2], obj.Data, 0o600)
	case "import":
		data, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		if _, err := session.Inspect(data, nil); err != nil {
			return fmt.Errorf("%s: %w", args[2], err)
		}
		_, err = st.Put(ctx, args[1], data, store.Cond{})
		return err
	case "files":
		files, err := session.ListFiles(ctx, args[1], readFilesOptions(st))
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PATH\tSIZE\tMODIFIED")
		for _, f := range files {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", f.Path, f.Size, f.Modified.Local().Format(time.DateTime))
		}
		return tw.Flush()
	case "cat":
		data, err := session.ReadFile(ctx, args[1], args[2], readFilesOptions(st))
		if errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("%w (monty session files %s lists them)", err, args[1])
		}
		if err != nil {
			return err
		}
		_, err = stdout.Write(data)
		return err
	}
	return fmt.Errorf("unknown session command %q", args[0])
}
