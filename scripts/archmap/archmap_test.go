package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMapIsCurrent fails when docs/architecture.md's import table is not
// the one the module's imports give (an import added, a package added or
// moved, without the doc): `go run ./scripts/archmap` writes it.
func TestMapIsCurrent(t *testing.T) {
	want, text := mapAndDoc(t)
	_, got, _, err := split(text)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("the import table of %s is not the module's imports; run `go run ./scripts/archmap` from the repository's root.\nwant:\n%s\ngot:\n%s", doc, want, got)
	}
}

// mapAndDoc are the import table the module's imports give and the text
// of the doc it belongs in.
func mapAndDoc(t *testing.T) (table string, text []byte) {
	t.Helper()
	root := filepath.Join("..", "..")
	table, err := importTable(root)
	if err != nil {
		t.Fatal(err)
	}
	text, err = os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	return table, text
}

// TestEveryPackageIsDescribed fails when a package of the module has no
// row in the doc's table of what each package does.
func TestEveryPackageIsDescribed(t *testing.T) {
	table, text := mapAndDoc(t)
	_, described, ok := strings.Cut(string(text), "### What each package does")
	if !ok {
		t.Fatalf("%s has no section \"What each package does\"", doc)
	}
	described, _, _ = strings.Cut(described, "\n## ")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| ((?:`[^`]+`(?:, )?)+) \\|").FindAllStringSubmatch(described, -1) {
		for _, p := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
			named[p[1]] = true
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(table, -1) {
		if !named[m[1]] {
			t.Errorf("package %s has no row in %s's \"What each package does\"", m[1], doc)
		}
	}
}

// TestSessionMethodsWhereTheMapSays checks the map's claim that
// session.Session's methods live in two files, session.go and live.go.
func TestSessionMethodsWhereTheMapSays(t *testing.T) {
	dir := filepath.Join("..", "..", "session")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			if id, ok := star.X.(*ast.Ident); ok && id.Name == "Session" {
				if base := filepath.Base(f); base != "session.go" && base != "live.go" {
					t.Errorf("(*Session).%s is in %s: the map (%s) says Session's methods live in session.go and live.go", fn.Name.Name, base, doc)
				}
			}
		}
	}
}
