//go:build unix

package runtimetest

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// pipe makes path a named pipe and returns a function that writes the
// contents of src into it: wazero's read of its cache file blocks until
// then. A test that fails before releasing leaves that read blocked (and
// nothing else).
func pipe(t testing.TB, path, src string) func() {
	t.Helper()
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // waits for the reader
		if err == nil {
			_, err = f.Write(code)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
