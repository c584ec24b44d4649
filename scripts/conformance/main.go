// Command conformance runs monty's own test cases (the test_cases/*.py files
// shipped in the monty 1.4.0 crate) through the Go runtime, and compares the
// results with the same cases run natively by scripts/native (monty-native).
//
//	go run ./scripts/conformance -cases DIR [-native results.jsonl] [flags]
//
// Both sides parse the cases the same way and provide the same external
// functions, names and OS services (see host.go and
// scripts/native/src/host.rs). The command prints one line per case, then
// a summary, and exits non-zero when a case that passes natively fails or
// is skipped through Go, unless it is listed with a reason in
// testdata/conformance/known-differences.txt (`name: reason` lines). A
// listed case that no longer differs also fails the run, so the list stays
// honest.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
}

type options struct {
	cases    string
	native   string
	known    string
	goOut    string
	only     string
	jobs     int
	quiet    bool
	mounts   string
	repoRoot string
}

func run() error {
	var o options
	flag.StringVar(&o.cases, "cases", "", "directory of monty's test_cases/*.py (required)")
	flag.StringVar(&o.native, "native", "", "native results (JSON lines from `monty-native conformance`); default: build and run scripts/native")
	flag.StringVar(&o.known, "known", "", "known differences file (default: testdata/conformance/known-differences.txt in the repository)")
	flag.StringVar(&o.goOut, "json", "", "also write the Go results as JSON lines to this file")
	flag.StringVar(&o.only, "run", "", "only cases whose name contains this text")
	flag.IntVar(&o.jobs, "jobs", goruntime.GOMAXPROCS(0), "cases run in parallel")
	flag.BoolVar(&o.quiet, "quiet", false, "print only cases whose native and Go results differ")
	flag.StringVar(&o.mounts, "mounts", "rw", "mount-fs cases run with the fixture on a copy-on-write overlay (vfs.OverlayFS), as natively; also run them once per mode listed here (comma-separated: rw, ro; empty: none), as `NAME [MODE]`, against the same native result")
	flag.Parse()
	if o.cases == "" {
		flag.Usage()
		return errors.New("-cases is required")
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	o.repoRoot = root
	if o.known == "" {
		o.known = filepath.Join(root, "testdata", "conformance", "known-differences.txt")
	}
	cases, err := loadCases(o.cases, o.only)
	if err != nil {
		return err
	}
	if cases, err = mountVariants(cases, o.mounts); err != nil {
		return err
	}
	known, err := readKnown(o.known)
	if err != nil {
		return err
	}

	native, err := nativeResults(o)
	if err != nil {
		return err
	}
	goRes, err := goResults(o, cases)
	if err != nil {
		return err
	}
	if o.goOut != "" {
		if err := writeJSONL(o.goOut, goRes); err != nil {
			return err
		}
	}
	if !report(os.Stdout, cases, native, goRes, known, o) {
		os.Exit(1)
	}
	return nil
}

// repoRoot finds the module root (go.mod of github.com/monty-go/monty)
// from the working directory upwards.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/monty-go/monty\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run inside the monty-go repository (no go.mod of github.com/monty-go/monty above the working directory)")
		}
		dir = parent
	}
}

func loadCases(dir, only string) ([]*testCase, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.py"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var cases []*testCase
	for _, p := range paths {
		if only != "" && !strings.Contains(filepath.Base(p), only) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		cases = append(cases, parseCase(filepath.Base(p), string(b)))
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no *.py test cases in %s", dir)
	}
	return cases, nil
}

// mountVariants adds, after each mount-fs case, a copy that mounts the
// fixture in each of the modes listed (comma-separated).
func mountVariants(cases []*testCase, modes string) ([]*testCase, error) {
	var extra []vfs.MountMode
	for _, m := range strings.Split(modes, ",") {
		switch strings.TrimSpace(m) {
		case "":
		case "rw":
			extra = append(extra, vfs.MountReadWrite)
		case "ro":
			extra = append(extra, vfs.MountReadOnly)
		default:
			return nil, fmt.Errorf("-mounts: unknown mode %q (use rw, ro or both)", m)
		}
	}
	var out []*testCase
	for _, c := range cases {
		out = append(out, c)
		if !c.Config.MountFS {
			continue
		}
		for _, m := range extra {
			v := *c
			v.Name, v.Mount = c.Name+" ["+m.String()+"]", m
			out = append(out, &v)
		}
	}
	return out, nil
}

// readKnown reads `name: reason` lines; blank lines and # comments are skipped.
func readKnown(path string) (map[string]string, error) {
	known := map[string]string{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return known, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, ":")
		name, reason = strings.TrimSpace(name), strings.TrimSpace(reason)
		if !ok || name == "" || reason == "" {
			return nil, fmt.Errorf("%s:%d: want `name: reason`", path, n)
		}
		if _, dup := known[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s listed twice", path, n, name)
		}
		known[name] = reason
	}
	return known, sc.Err()
}

// nativeResults reads -native, or builds and runs the native harness.
func nativeResults(o options) (map[string]result, error) {
	var data []byte
	if o.native != "" {
		b, err := os.ReadFile(o.native)
		if err != nil {
			return nil, err
		}
		data = b
	} else {
		bin, err := buildNative(o.repoRoot)
		if err != nil {
			return nil, err
		}
		args := []string{"conformance", o.cases, "--jobs", fmt.Sprint(o.jobs)}
		if o.only != "" {
			args = append(args, o.only)
		}
		fmt.Fprintf(os.Stderr, "conformance: running %s %s\n", bin, strings.Join(args, " "))
		cmd := exec.Command(bin, args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("native harness: %w", err)
		}
		data = out
	}
	res := map[string]result{}
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r result
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("native results line %d: %w", n+1, err)
		}
		res[r.Name] = r
	}
	return res, nil
}

// buildNative builds scripts/native (a no-op when up to date) with
// scripts/native/build.sh and returns the binary's path.
func buildNative(root string) (string, error) {
	script := filepath.Join(root, "scripts", "native", "build.sh")
	cmd := exec.Command("bash", script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the native harness (%s): %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// goResults runs every case through the Go runtime, jobs at a time.
func goResults(o options, cases []*testCase) (map[string]result, error) {
	ctx := context.Background()
	if os.Getenv(runtime.CacheDirEnv) == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			_ = os.Setenv(runtime.CacheDirEnv, filepath.Join(dir, "monty-go", "wazero"))
		}
	}
	eng, err := runtime.Default(ctx)
	if err != nil {
		return nil, err
	}
	res := make([]result, len(cases))
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(o.jobs, 1) {
		wg.Go(func() {
			for i := range next {
				res[i] = runCase(ctx, eng, cases[i])
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	out := map[string]result{}
	for _, r := range res {
		out[r.Name] = r
	}
	return out, nil
}

func writeJSONL(path string, res map[string]result) error {
	var b bytes.Buffer
	names := make([]string, 0, len(res))
	for n := range res {
		names = append(names, n)
	}
	slices.Sort(names)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, n := range names {
		if err := enc.Encode(res[n]); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

type counts struct{ total, pass, fail, skip int }

func (c *counts) add(status string) {
	c.total++
	switch status {
	case "pass":
		c.pass++
	case "fail":
		c.fail++
	case "skip":
		c.skip++
	}
}

// report prints the per-case lines and the summary; it returns false when
// the run must fail.
func report(w io.Writer, cases []*testCase, native, goRes map[string]result, known map[string]string, o options) bool {
	var nat, gor counts
	var unexpected, knownHit, stale, better []string
	fmt.Fprintf(w, "%-50s %-6s %-6s %s\n", "case", "native", "go", "detail")
	for _, c := range cases {
		n, ok := native[c.Native]
		if !ok {
			n = result{Name: c.Name, Status: "missing", Detail: "not in the native results"}
		}
		g := goRes[c.Name]
		nat.add(n.Status)
		gor.add(g.Status)
		regression := n.Status == "pass" && g.Status != "pass"
		_, isKnown := known[c.Name]
		mark := ""
		switch {
		case regression && isKnown:
			knownHit = append(knownHit, c.Name)
			mark = "known"
		case regression:
			unexpected = append(unexpected, c.Name)
			mark = "REGRESSION"
		case isKnown:
			stale = append(stale, c.Name)
			mark = "STALE"
		case g.Status == "pass" && n.Status != "pass":
			better = append(better, c.Name)
		}
		if o.quiet && n.Status == g.Status && mark == "" {
			continue
		}
		detail := g.Detail
		if n.Status != "pass" && n.Detail != "" {
			detail = "native: " + n.Detail + ifNotEmpty(" | go: ", g.Detail)
		}
		if mark != "" {
			detail = "[" + mark + "] " + detail
		}
		fmt.Fprintf(w, "%-50s %-6s %-6s %s\n", c.Name, n.Status, g.Status, oneLine(detail))
	}
	for name := range known {
		if _, ok := goRes[name]; !ok && o.only == "" {
			stale = append(stale, name+" (no such case)")
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-8s %6s %6s %6s %6s\n", "", "total", "pass", "fail", "skip")
	fmt.Fprintf(w, "%-8s %6d %6d %6d %6d\n", "native", nat.total, nat.pass, nat.fail, nat.skip)
	fmt.Fprintf(w, "%-8s %6d %6d %6d %6d\n", "go", gor.total, gor.pass, gor.fail, gor.skip)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "pass natively, not through Go: %d (%d known differences, %d unexpected)\n",
		len(knownHit)+len(unexpected), len(knownHit), len(unexpected))
	if len(better) > 0 {
		list := better
		if len(list) > 20 {
			list = append(list[:20:20], "…")
		}
		fmt.Fprintf(w, "pass through Go, not natively: %d (%s)\n", len(better), strings.Join(list, ", "))
	}
	ok := true
	if len(unexpected) > 0 {
		fmt.Fprintf(w, "FAIL: %d case(s) pass natively but not through Go and are not in %s:\n  %s\n",
			len(unexpected), o.known, strings.Join(unexpected, "\n  "))
		ok = false
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		fmt.Fprintf(w, "FAIL: %d entr(y/ies) of %s no longer differ; remove them:\n  %s\n",
			len(stale), o.known, strings.Join(stale, "\n  "))
		ok = false
	}
	if ok {
		fmt.Fprintln(w, "OK: every case that passes natively passes through Go, or is a known difference")
	}
	return ok
}

func ifNotEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > 300 {
		end := 300
		for end > 0 && !isRuneStart(s[end]) {
			end--
		}
		s = s[:end] + "…"
	}
	return s
}
