package main

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitRepo makes a repository holding a module at its root and one nested
// in sub/, both tagged, and a file git does not hold.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/m\n\ngo 1.22\n",
		"m.go":          "package m\n",
		"sub/go.mod":    "module example.com/m/sub\n\ngo 1.22\n\nrequire example.com/m v1.2.3\n",
		"sub/sub.go":    "package sub\n",
		"sub/gen/g.go":  "package gen\n",
		".gitignore":    "sub/gen/\n",
		"internal/x.go": "package x\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one"},
		{"tag", "v1.2.3"},
		{"tag", "sub/v0.1.0"},
	} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return dir
}

func zipNames(t *testing.T, path string) []string {
	t.Helper()
	r, err := zip.OpenReader(path)
	require.NoError(t, err)
	defer r.Close()
	var names []string
	for _, f := range r.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// TestPublish: each tag becomes its module's .info, .mod and .zip with the
// files git holds at the tag, a nested module's left out of its parent's.
func TestPublish(t *testing.T) {
	repo := gitRepo(t)
	out := t.TempDir()
	for _, tag := range []string{"v1.2.3", "sub/v0.1.0", "v1.2.3"} {
		_, err := publish(repo, out, tag)
		require.NoError(t, err, tag)
	}

	root := filepath.Join(out, "example.com", "m", "@v")
	assert.Equal(t, []string{
		"example.com/m@v1.2.3/.gitignore", "example.com/m@v1.2.3/go.mod",
		"example.com/m@v1.2.3/internal/x.go", "example.com/m@v1.2.3/m.go",
	}, zipNames(t, filepath.Join(root, "v1.2.3.zip")))
	list, err := os.ReadFile(filepath.Join(root, "list"))
	require.NoError(t, err)
	assert.Equal(t, "v1.2.3\n", string(list), "a version published twice is listed once")
	info, err := os.ReadFile(filepath.Join(root, "v1.2.3.info"))
	require.NoError(t, err)
	assert.Contains(t, string(info), `"Version":"v1.2.3"`)

	sub := filepath.Join(out, "example.com", "m", "sub", "@v")
	assert.Equal(t, []string{"example.com/m/sub@v0.1.0/go.mod", "example.com/m/sub@v0.1.0/sub.go"},
		zipNames(t, filepath.Join(sub, "v0.1.0.zip")), "a file git does not hold is not in the zip")
	mod, err := os.ReadFile(filepath.Join(sub, "v0.1.0.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "require example.com/m v1.2.3")
}

// TestPublishRefuses: a tag that is no canonical version, or names no
// module, or does not exist, publishes nothing.
func TestPublishRefuses(t *testing.T) {
	repo := gitRepo(t)
	out := t.TempDir()
	for tag, want := range map[string]string{
		"v1.2":           "not a canonical semantic version",
		"sub/latest":     "not a canonical semantic version",
		"nowhere/v0.1.0": "no go.mod",
		"v9.9.9":         "no go.mod",
	} {
		_, err := publish(repo, out, tag)
		assert.ErrorContains(t, err, want, tag)
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Empty(t, entries)
}
