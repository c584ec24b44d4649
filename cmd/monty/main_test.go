package main_test

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/store/storetest"
)

// binary is the monty command built once for the tests of this file.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "monty-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "monty")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("building cmd/monty: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the built monty with args in a process of its own.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runBinary(t, binary, nil, args...)
}

// runBinary runs bin with args and env added to this process's
// environment, in a process of its own.
func runBinary(t *testing.T, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errOut.String()
}

func redisSpec(t *testing.T) string {
	return storetest.RedisURL(t) + "?prefix=" + url.QueryEscape("monty-"+storetest.UniquePrefix(t))
}

func s3Spec(t *testing.T) string {
	env := storetest.S3(t)
	u := url.URL{Scheme: "s3", User: url.UserPassword(env.AccessKey, env.SecretKey), Host: env.Endpoint,
		Path: "/" + env.Bucket, RawQuery: "prefix=" + url.QueryEscape(storetest.UniquePrefix(t))}
	return u.String()
}

// define builds a function, a class, an instance of it and a closure.
const define = `
def area(w, h):
    return w * h

class Counter:
    def __init__(self, start):
        self.n = start
    def bump(self, by=1):
        self.n += by
        return self.n

def make_adder(k):
    def add(x):
        return x + k
    return add

c = Counter(10)
add5 = make_adder(5)
c.bump()
`

// use exercises everything define built, and changes the instance.
const use = `print(area(3, 4), c.bump(2), add5(1), type(c).__name__, Counter(1).bump())`

// TestStateSurvivesRestartAndBackendMoves defines functions, classes,
// instances and closures in one process, uses them from later processes,
// and moves the session through every kind of store with export/import.
func TestStateSurvivesRestartAndBackendMoves(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := run(t, "--store", dir, "--session", "agent", "-c", define)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := run(t, "--store", dir, "--session", "agent", "-c", use)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "12 13 6 Counter 2\n", out)

	blob := filepath.Join(t.TempDir(), "agent.state")
	from := dir
	want := 13
	for _, to := range []struct{ name, spec string }{
		{"redis", redisSpec(t)},
		{"s3", s3Spec(t)},
		{"tiered", redisSpec(t) + "," + s3Spec(t)},
		{"dir", t.TempDir()},
	} {
		code, _, errOut = run(t, "session", "--store", from, "export", "agent", blob)
		require.Equal(t, 0, code, "export: %s", errOut)
		code, _, errOut = run(t, "session", "--store", to.spec, "import", "agent", blob)
		require.Equal(t, 0, code, "import into %s: %s", to.name, errOut)
		code, out, errOut = run(t, "--store", to.spec, "--session", "agent", "-c", use)
		require.Equal(t, 0, code, "%s: %s", to.name, errOut)
		want += 2
		assert.Equal(t, "12 "+strconv.Itoa(want)+" 6 Counter 2\n", out, "after the move to %s", to.name)
		from = to.spec
	}
}

// TestProcessesRacingOnOneSession starts processes that all increment one
// session's counter at once. Each either saves its increment or fails with
// a conflict; the final counter equals the number that saved: no update is
// lost, none is counted twice.
func TestProcessesRacingOnOneSession(t *testing.T) {
	for _, st := range []struct{ name, spec string }{
		{"dir", t.TempDir()},
		{"redis", redisSpec(t)},
		{"s3", s3Spec(t)},
	} {
		t.Run(st.name, func(t *testing.T) {
			code, _, errOut := run(t, "--store", st.spec, "--session", "race", "-c", "n = 0")
			require.Equal(t, 0, code, errOut)
			const procs = 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			saved, conflicts := 0, 0
			for range procs {
				wg.Go(func() {
					code, _, errOut := run(t, "--store", st.spec, "--session", "race", "-c", "n += 1")
					mu.Lock()
					defer mu.Unlock()
					switch {
					case code == 0:
						saved++
					case strings.Contains(errOut, "another process updated this session"):
						conflicts++
					default:
						t.Errorf("exit %d: %s", code, errOut)
					}
				})
			}
			wg.Wait()
			code, out, errOut := run(t, "--store", st.spec, "--session", "race", "-c", "print(n)")
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, strconv.Itoa(saved)+"\n", out, "%d saved, %d conflicts", saved, conflicts)
			assert.Equal(t, procs, saved+conflicts)
			assert.Positive(t, saved)
			t.Logf("%d processes: %d saved, %d got a conflict", procs, saved, conflicts)
		})
	}
}

func TestBadStoreSpec(t *testing.T) {
	code, _, errOut := run(t, "--store", "mem:?colour=blue", "--session", "x", "-c", "1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "invalid store spec")
	code, _, errOut = run(t, "--store", "redis://127.0.0.1:1/0", "--session", "x", "-c", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "unavailable")
}
