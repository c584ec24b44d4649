// Command modproxy writes a Go module proxy directory (GOPROXY=file://DIR)
// serving this repository's modules at the given tags, each module zip made
// from the tagged commit the way the public proxy makes it (the files git
// holds there, nested modules left out, the module zip limits checked).
// scripts/aot-release.sh --check uses it to fetch a release of
// github.com/monty-go/monty/wasm/aot with `go get` before anything is
// pushed:
//
//	go run ./scripts/modproxy -repo . -out /tmp/proxy v0.3.0 wasm/aot/v0.3.0
//
// A tag is VERSION for the module at the repository's root, or
// DIR/VERSION for the module in DIR; its path is read from DIR/go.mod at the
// tag.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", ".", "the git repository holding the tags")
	out := flag.String("out", "", "the proxy directory to write (created; existing versions are replaced)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: modproxy -repo DIR -out DIR TAG...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	for _, tag := range flag.Args() {
		m, err := publish(*repo, *out, tag)
		if err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", tag, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "modproxy: %s@%s from tag %s\n", m.Path, m.Version, tag)
	}
}

// publish writes the .info, .mod and .zip of the module at tag into the
// proxy directory out and adds its version to the module's list.
func publish(repo, out, tag string) (module.Version, error) {
	dir, version := path.Split(tag)
	dir = strings.TrimSuffix(dir, "/")
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return module.Version{}, fmt.Errorf("%q is not a canonical semantic version (want v1.2.3 or DIR/v1.2.3)", version)
	}
	goMod, err := git(repo, "show", tag+":"+path.Join(dir, "go.mod"))
	if err != nil {
		return module.Version{}, fmt.Errorf("no go.mod in %q at the tag: %w", dir, err)
	}
	m := module.Version{Path: modfile.ModulePath(goMod), Version: version}
	if m.Path == "" {
		return m, errors.New("its go.mod names no module")
	}
	when, err := git(repo, "log", "-1", "--format=%cI", tag)
	if err != nil {
		return m, err
	}
	stamp, err := time.Parse(time.RFC3339, strings.TrimSpace(string(when)))
	if err != nil {
		return m, fmt.Errorf("commit time: %w", err)
	}
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return m, err
	}
	versions := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(versions, 0o755); err != nil {
		return m, err
	}
	var archive bytes.Buffer
	if err := zip.CreateFromVCS(&archive, m, repo, tag, dir); err != nil {
		return m, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, stamp.UTC()})
	if err != nil {
		return m, err
	}
	for ext, data := range map[string][]byte{".zip": archive.Bytes(), ".mod": goMod, ".info": info} {
		if err := os.WriteFile(filepath.Join(versions, version+ext), data, 0o644); err != nil {
			return m, err
		}
	}
	return m, addToList(filepath.Join(versions, "list"), version)
}

// addToList adds version to a proxy's list file unless it is there.
func addToList(list, version string) error {
	old, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, v := range strings.Fields(string(old)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(list, append(old, version+"\n"...), 0o644)
}

// git runs a git command in repo and returns its standard output.
func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return b, nil
}
