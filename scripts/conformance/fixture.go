package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// errHostChanged marks a case whose mount changed the fixture directory
// though it must not (an overlay, a read-only mount).
var errHostChanged = errors.New("the mount changed the host directory")

// snapshot describes every entry below dir, by relative path: its type and
// permissions, and a file's contents or a link's target.
func snapshot(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %d bytes sha256:%x", len(b), sha256.Sum256(b))
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the fixture directory: %w", err)
	}
	return out, nil
}

// diffSnapshots says what differs between two snapshots.
func diffSnapshots(before, after map[string]string) string {
	var diffs []string
	for p, b := range before {
		switch a, ok := after[p]; {
		case !ok:
			diffs = append(diffs, p+" removed")
		case a != b:
			diffs = append(diffs, p+" changed ("+b+" → "+a+")")
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, p+" added")
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}
