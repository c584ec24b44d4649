//go:build unix

package runtimetest

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// pipes makes each machine-code path a named pipe and returns a function
// that waits until wazero opens one of them to read and writes the matching
// machine code into it. A test that fails before releasing leaves that read
// blocked (and nothing else).
func pipes(t testing.TB, files map[string]string) func() {
	t.Helper()
	for dst := range files {
		if err := syscall.Mkfifo(dst, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			for dst, src := range files {
				// Without a reader, a non-blocking open for writing fails
				// with ENXIO.
				f, err := os.OpenFile(dst, os.O_WRONLY|syscall.O_NONBLOCK, 0)
				if errors.Is(err, syscall.ENXIO) {
					continue
				}
				var code []byte
				if err == nil {
					if code, err = os.ReadFile(src); err == nil {
						_, err = f.Write(code)
					}
					err = errors.Join(err, f.Close())
				}
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatal("runtimetest: nothing read the gated cache within 5 minutes")
	}
}
