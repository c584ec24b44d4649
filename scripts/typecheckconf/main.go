// Command typecheckconf compares Monty's type checker through Go
// (runtime/typecheck and the committed wasm/checker/checker.wasm) with the
// same checker run natively, on the test cases the monty-type-checking
// 1.4.0 crate ships: tests/good_types.py (must check clean),
// tests/bad_types.py and tests/reveal_types.py (concise diagnostics, which
// must equal upstream's insta snapshots in tests/snapshots/).
//
//	go run ./scripts/typecheckconf -crate DIR [-native results.txt]
//
// -native is the output of the crate's own tests run natively (`cargo test
// --test main`, as scripts/typecheck-conformance.sh does): every native
// test is listed with its result, and the three file cases side by side
// with the Go result. The command exits non-zero when a case that passes
// natively does not pass through Go, unless testdata/typecheck/
// known-differences.txt lists it (`name: reason`); a listed case that no
// longer differs fails the run too.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/monty-go/monty/runtime/typecheck"
	_ "github.com/monty-go/monty/runtime/typecheck/embedded" // checker.wasm, for type checks on wazero
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "typecheckconf:", err)
		os.Exit(2)
	}
}

// fileCase is one of the crate's file-based tests, by its native test name.
type fileCase struct {
	test     string // the #[test] function in tests/main.rs
	file     string // under tests/
	snapshot string // under tests/snapshots/; "" means the file must check clean
}

var fileCases = []fileCase{
	{"type_good_types", "good_types.py", ""},
	{"type_bad_types", "bad_types.py", "main__type_bad_types.snap"},
	{"test_reveal_types", "reveal_types.py", "main__reveal_types.snap"},
}

func run() error {
	crate := flag.String("crate", "", "directory of the monty-type-checking 1.4.0 crate (required)")
	native := flag.String("native", "", "output of `cargo test --test main` in the crate (optional)")
	known := flag.String("known", "testdata/typecheck/known-differences.txt", "known differences, `name: reason` per line")
	flag.Parse()
	if *crate == "" {
		return fmt.Errorf("-crate is required")
	}
	nativeResults := map[string]string{}
	if *native != "" {
		var err error
		if nativeResults, err = readNative(*native); err != nil {
			return err
		}
	}
	knownDiffs, err := readKnown(*known)
	if err != nil {
		return err
	}
	ctx := context.Background()
	checker, err := typecheck.New(ctx)
	if err != nil {
		return err
	}
	defer checker.Close(ctx)

	goResults := map[string]string{}
	details := map[string]string{}
	for _, c := range fileCases {
		result, detail, err := runCase(ctx, checker, *crate, c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.test, err)
		}
		goResults[c.test], details[c.test] = result, detail
	}

	names := make([]string, 0, len(nativeResults)+len(fileCases))
	for n := range nativeResults {
		names = append(names, n)
	}
	for _, c := range fileCases {
		if _, ok := nativeResults[c.test]; !ok {
			names = append(names, c.test)
		}
	}
	slices.Sort(names)
	fmt.Printf("%-60s %-8s %s\n", "test (monty-type-checking 1.4.0, tests/main.rs)", "native", "through Go")
	var unexpected []string
	stale := []string{}
	for _, n := range names {
		nat, ok := nativeResults[n]
		if !ok {
			nat = "-"
		}
		g, ok := goResults[n]
		if !ok {
			g = "n/a (inline test, not a file case)"
		}
		fmt.Printf("%-60s %-8s %s\n", n, nat, g)
		if _, isFile := goResults[n]; !isFile {
			continue
		}
		differs := g != "pass" && (nat == "pass" || nat == "-")
		_, listed := knownDiffs[n]
		switch {
		case differs && !listed:
			unexpected = append(unexpected, n)
			fmt.Println(indent(details[n]))
		case !differs && listed:
			stale = append(stale, n)
		}
	}
	passed := 0
	for _, c := range fileCases {
		if goResults[c.test] == "pass" {
			passed++
		}
	}
	engine := "on wazero"
	if checker.CompileInfo().AOT {
		engine = "translated to Go ahead of time"
	}
	fmt.Printf("\nfile cases through Go (the checker %s): %d of %d pass; native tests: %d listed\n",
		engine, passed, len(fileCases), len(nativeResults))
	if len(unexpected) > 0 || len(stale) > 0 {
		return fmt.Errorf("unexpected differences: %v; listed as known but no longer different: %v", unexpected, stale)
	}
	return nil
}

// runCase checks one file case through Go and compares it with upstream's
// expectation.
func runCase(ctx context.Context, checker *typecheck.Checker, crate string, c fileCase) (result, detail string, err error) {
	code, err := os.ReadFile(filepath.Join(crate, "tests", c.file))
	if err != nil {
		return "", "", err
	}
	res, err := checker.Check(ctx, typecheck.Request{Code: string(code), Path: c.file, Format: typecheck.Concise})
	if err != nil {
		return "error", err.Error(), nil
	}
	if c.snapshot == "" {
		if res.Clean() {
			return "pass", "", nil
		}
		return "fail", "expected no diagnostics, got:\n" + res.Text, nil
	}
	want, err := readSnapshot(filepath.Join(crate, "tests", "snapshots", c.snapshot))
	if err != nil {
		return "", "", err
	}
	got := strings.TrimRight(res.Text, "\n")
	if got == want {
		return "pass", "", nil
	}
	return "fail", diffLines(want, got), nil
}

// readSnapshot returns the body of an insta snapshot file (after its
// second "---" line).
func readSnapshot(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	parts := strings.SplitN(string(b), "---\n", 3)
	if len(parts) != 3 {
		return "", fmt.Errorf("%s: not an insta snapshot", path)
	}
	return strings.TrimRight(parts[2], "\n"), nil
}

var testLine = regexp.MustCompile(`^test (\S+) \.\.\. (ok|FAILED|ignored)`)

// readNative reads libtest's "test NAME ... ok" lines.
func readNative(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := testLine.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = map[string]string{"ok": "pass", "FAILED": "fail", "ignored": "skip"}[m[2]]
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no test results in it", path)
	}
	return out, sc.Err()
}

func readKnown(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, ":")
		out[strings.TrimSpace(name)] = strings.TrimSpace(reason)
	}
	return out, nil
}

// diffLines lists the lines only one side has.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
