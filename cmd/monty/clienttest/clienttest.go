// Package clienttest runs the Python clients in testdata/clients (scripts
// that drive monty through packages written by others: the official MCP
// SDK, AG-UI's event models, upstream Monty) from Go tests.
package clienttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"
)

// Python returns MONTY_TEST_PYTHON, the interpreter of the environment
// scripts/pyclients.sh makes, failing t when it is unset.
func Python(t testing.TB) string {
	t.Helper()
	return pythonFrom(t, "MONTY_TEST_PYTHON", "Python clients")
}

// IntegrationsPython returns MONTY_TEST_INTEGRATIONS_PYTHON, the Python
// 3.12 interpreter of the environment scripts/pyclients.sh makes for the
// integrations built on pydantic-monty (testdata/clients/integrations),
// failing t when it is unset.
func IntegrationsPython(t testing.TB) string {
	t.Helper()
	return pythonFrom(t, "MONTY_TEST_INTEGRATIONS_PYTHON", "integrations")
}

// pythonFrom returns the interpreter the variable name holds, failing t
// with what to run when it is unset; what names the packages it has.
func pythonFrom(t testing.TB, name, what string) string {
	t.Helper()
	py := os.Getenv(name)
	if py == "" {
		if testing.Short() {
			t.Skip("needs the Python clients from PyPI: -short (make test-quick) leaves it out; the full test command runs it")
		}
		t.Fatal(name + " is not set: this test drives monty through " + what + " from PyPI; run " +
			"`eval \"$(scripts/pyclients.sh env)\"` from the repository root (scripts/test.sh does this), then run the tests again")
	}
	return py
}

// UpstreamMonty is upstream Monty's `monty` binary, its monty.v1 worker,
// which pydantic-monty-runtime installs beside the environment's Python.
func UpstreamMonty(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(Python(t)), "monty")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("upstream's worker is missing from the client environment (pydantic-monty-runtime): %v", err)
	}
	return bin
}

// Script is the path of testdata/clients/name.
func Script(name string) string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "clients", name)
}

// Run runs testdata/clients/script with args under Python, with env added
// to the environment, and fails t (showing both streams) unless it exits 0
// within the timeout. It returns the script's stdout.
func Run(t testing.TB, timeout time.Duration, env []string, script string, args ...string) string {
	t.Helper()
	return RunWith(t, Python(t), timeout, env, script, args...)
}

// RunWith is Run under the interpreter python.
func RunWith(t testing.TB, python string, timeout time.Duration, env []string, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{Script(script)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v (timeout %s)\nstdout:\n%s\nstderr:\n%s", script, args, err, timeout, stdout.String(), stderr.String())
	}
	return stdout.String()
}
