// Command archmap writes the import table of docs/architecture.md from
// `go list`: a row for every package of the module with the module's
// packages it imports (its test files left out). Run it from the
// repository's root after changing imports:
//
//	go run ./scripts/archmap
//
// The table stands between the lines "<!-- archmap:begin -->" and
// "<!-- archmap:end -->" of the doc. Its test fails when the doc's table
// is not the one the imports give, so the map cannot drift from the code.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const (
	module = "github.com/monty-go/monty"
	doc    = "docs/architecture.md"
	begin  = "<!-- archmap:begin -->"
	end    = "<!-- archmap:end -->"
)

func main() {
	if err := write("."); err != nil {
		fmt.Fprintln(os.Stderr, "archmap:", err)
		os.Exit(1)
	}
}

// write rewrites the table of the doc under root.
func write(root string) error {
	table, err := importTable(root)
	if err != nil {
		return err
	}
	path := filepath.Join(root, doc)
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	before, _, after, err := split(text)
	if err != nil {
		return err
	}
	return os.WriteFile(path, slices.Concat(before, []byte(table), after), 0o644)
}

// split cuts the doc around its table: what precedes it (the begin line
// included), the table, and what follows (the end line included).
func split(text []byte) (before, table, after []byte, err error) {
	i := bytes.Index(text, []byte(begin+"\n"))
	j := bytes.Index(text, []byte(end))
	if i < 0 || j < i {
		return nil, nil, nil, fmt.Errorf("%s has no %q line followed by an %q line", doc, begin, end)
	}
	i += len(begin) + 1
	return text[:i], text[i:j], text[j:], nil
}

// importTable is the Markdown table of the module's packages and their
// imports within the module, sorted by path.
func importTable(root string) (string, error) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	imports := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, ok := local(fields[0])
		if !ok {
			return "", errors.New("go list named a package outside the module: " + fields[0])
		}
		imports[pkg] = []string{}
		for _, imp := range fields[1:] {
			if p, ok := local(imp); ok {
				imports[pkg] = append(imports[pkg], p)
			}
		}
	}
	var b strings.Builder
	b.WriteString("| package | imports |\n|---|---|\n")
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		list := "—"
		if imps := imports[pkg]; len(imps) > 0 {
			slices.Sort(imps)
			list = "`" + strings.Join(imps, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", pkg, list)
	}
	return b.String(), nil
}

// local is path within the module, and whether it is in it.
func local(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	return strings.CutPrefix(path, module+"/")
}
