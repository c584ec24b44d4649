package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// scriptsDoc is the index of scripts/.
const scriptsDoc = "docs/scripts.md"

// TestEveryScriptIsIndexed fails when a file or folder of scripts/ (or of
// scripts/bench/, the benchmarks' folder) has no row in docs/scripts.md,
// or a row names one that is gone: every script is reachable from the
// index (the Makefile's targets are in its rows too).
func TestEveryScriptIsIndexed(t *testing.T) {
	root := filepath.Join("..", "..")
	text, err := os.ReadFile(filepath.Join(root, scriptsDoc))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(scripts/[^`]+)` \\|").FindAllStringSubmatch(string(text), -1) {
		rows[m[1]] = true
	}
	present := map[string]bool{}
	for _, dir := range []string{"scripts", "scripts/bench"} {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || name == "__pycache__" {
				continue
			}
			present[dir+"/"+name] = true
		}
	}
	for p := range present {
		if !rows[p] {
			t.Errorf("%s has no row in %s: say there what it does and what runs it", p, scriptsDoc)
		}
	}
	for p := range rows {
		if !present[p] {
			t.Errorf("%s names %s, which is not in the repository", scriptsDoc, p)
		}
	}
}
