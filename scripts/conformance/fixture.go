package main

import (
	"os"
	"path/filepath"
)

// makeFixture creates a fresh copy of the directory mount-fs cases see at
// /mnt, the same tree the native harness builds (scripts/native/src/fixture.rs):
// hello.txt, empty.txt, data.bin, readonly.txt (0o444), subdir/nested.txt,
// subdir/deep/file.txt and a dangling symlink subdir/deep/dangling. The
// caller removes it with removeFixture.
func makeFixture() (string, error) {
	dir, err := os.MkdirTemp("", "monty-go-fixture-")
	if err != nil {
		return "", err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return "", err
	}
	files := []struct{ name, data string }{
		{"hello.txt", "hello world\n"},
		{"empty.txt", ""},
		{"data.bin", "\x00\x01\x02\x03"},
		{"readonly.txt", "readonly content"},
		{"subdir/nested.txt", "nested content"},
		{"subdir/deep/file.txt", "deep file"},
	}
	if err := os.MkdirAll(filepath.Join(dir, "subdir", "deep"), 0o755); err != nil {
		return dir, err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.data), 0o644); err != nil {
			return dir, err
		}
	}
	if err := os.Symlink("missing-target", filepath.Join(dir, "subdir", "deep", "dangling")); err != nil {
		return dir, err
	}
	return dir, os.Chmod(filepath.Join(dir, "readonly.txt"), 0o444)
}

func removeFixture(dir string) {
	if dir == "" {
		return
	}
	_ = os.Chmod(filepath.Join(dir, "readonly.txt"), 0o644)
	_ = os.RemoveAll(dir)
}
