package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sampleMain runs the sample module's export and prints what it returns
// and what its host import saw.
const sampleMain = `package main

import (
	"fmt"

	"example.com/split/sample"
)

type env struct{}

func (env) Xlog(v int32) int32 { fmt.Println("log", v); return v + 1 }

func main() {
	m := sample.New(env{})
	for i := int32(0); i < 6; i++ {
		fmt.Println("run", i, m.Xrun(i))
	}
	fmt.Println("memory", len(*m.Xmemory().Slice()), m.Xmemory().Grow(0, 1))
}
`

// writeSample writes a module holding the sample translation
// (testdata/sample, in wasm2go's shape: methods calling each other, a
// function without the instance, a table of both, a call through it,
// exports, a data segment) and a program running it; split splits it.
func writeSample(t *testing.T, split bool) string {
	t.Helper()
	dir := t.TempDir()
	pkg := filepath.Join(dir, "sample")
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cmd"), 0o755))
	for from, to := range map[string]string{"module.go.txt": "module.go", "shared.go.txt": "shared.go"} {
		b, err := os.ReadFile(filepath.Join("testdata", "sample", from))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(pkg, to), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/split\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cmd", "main.go"), []byte(sampleMain), 0o644))
	if split {
		// A budget of one byte: every function in a part of its own;
		// functions of at most 150 bytes (all but fn2 and fn6) copied.
		require.NoError(t, run(pkg, "example.com/split/sample", 1, 150, []string{"shared.go"}))
	}
	return dir
}

func goRun(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("go", "run", "./cmd")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

func TestSplitRunsAsTheWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	whole := goRun(t, writeSample(t, false))
	require.Contains(t, whole, "log ")
	splitDir := writeSample(t, true)
	require.Equal(t, whole, goRun(t, splitDir), "the split module must compute what the whole does")

	pkg := filepath.Join(splitDir, "sample")
	parts, err := filepath.Glob(filepath.Join(pkg, "part*"))
	require.NoError(t, err)
	require.Len(t, parts, 7, "one part per function")
	for _, name := range []string{"state/module.go", "state/shared.go", "part00/shared.go", "links.go"} {
		require.FileExists(t, filepath.Join(pkg, name))
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(pkg, name))
		require.NoError(t, err)
		return string(b)
	}
	// fn2 (part02) calls fn6 in another part through a linkname; fn3
	// (part03) has its own copies of fn0, fn1 and fn4, small, and so no
	// links.
	require.Contains(t, read("part02/links.go"), "//go:linkname fn6 example.com/split/sample/part06.fn6\nfunc fn6(m *state.Module, v0 int32) int32")
	require.NoFileExists(t, filepath.Join(pkg, "part03/links.go"))
	for _, f := range []string{"func fn0(m *state.Module, v0 int32) int32 {", "func fn1(m *state.Module) int32 {", "func fn4(v0, v1 int32) int32 {"} {
		require.Contains(t, read("part03/module.go"), f)
	}
	// New's table: closures over the instance, and fn4 itself.
	root := read("module.go")
	require.Contains(t, root, "func(v0, v1 int32) int32 { return fn2(&m.Module, v0, v1) }")
	require.Contains(t, root, "m.Elements = [][]any{m.segment0(), m.segment1()}")
	require.Contains(t, root, "\tstate.Module\n")
	require.NotContains(t, root, "m.memory", "fields are the exported ones of package state")
}

func TestSplitIsDeterministic(t *testing.T) {
	a, b := writeSample(t, true), writeSample(t, true)
	var files []string
	require.NoError(t, filepath.WalkDir(filepath.Join(a, "sample"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(path, a))
		}
		return err
	}))
	require.Greater(t, len(files), 10)
	for _, f := range files {
		x, err := os.ReadFile(a + f)
		require.NoError(t, err)
		y, err := os.ReadFile(b + f)
		require.NoError(t, err)
		require.Equal(t, string(x), string(y), f)
	}
}

func TestSplitRefusesWhatItDoesNotKnow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "sample", "module.go.txt"))
	require.NoError(t, err)
	for name, edit := range map[string][2]string{
		"an unknown declaration":        {"const maxMem = 65536\n", "const maxMem = 65536\n\ntype other struct{}\n"},
		"a call of an undeclared fn":    {"t1 := m.fn1()", "t1 := m.fn99()"},
		"a method value outside New":    {"t1 := m.fn1()", "t1 := m.fn1; _ = t1"},
		"no Module struct":              {"type Module struct {", "type Modul struct {"},
		"an element segment with calls": {"{m.fn5}}", "{m.fn5, f()}}"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src := strings.Replace(string(b), edit[0], edit[1], 1)
			require.NotEqual(t, string(b), src, "the edit must apply")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "module.go"), []byte(src), 0o644))
			require.Error(t, run(dir, "example.com/split/sample", 1, 150, nil))
		})
	}
}
