package embedded_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/typecheck"
	_ "github.com/monty-go/monty/runtime/typecheck/embedded"
)

// Importing the package is what lets a Checker run checker.wasm.
func TestImportLinksTheModule(t *testing.T) {
	c, err := typecheck.New(context.Background(), typecheck.WithWazero(), typecheck.WithCacheDir(""))
	require.NoError(t, err)
	defer c.Close(context.Background())
	res, err := c.Check(context.Background(), typecheck.Request{Code: "x: int = 'a'\n"})
	require.NoError(t, err)
	require.ErrorIs(t, res.Err(), typecheck.ErrTypeErrors)
	require.Contains(t, res.Text, "invalid-assignment")
}

// Programs that never type-check do not carry checker.wasm: the linker
// keeps checker.Module only when something reachable refers to it, and
// only this package does, which no library package imports; the CLI
// does.
func TestOnlyThisPackageRefersToTheModule(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	var refs []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root || path == filepath.Join(root, "wasm", "aot")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		name := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"github.com/monty-go/monty/wasm/checker"` {
				name = "checker"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == "Module" {
				if x, ok := s.X.(*ast.Ident); ok && x.Name == name {
					refs = append(refs, filepath.ToSlash(path))
				}
			}
			return true
		})
		return nil
	}))
	require.Equal(t, []string{"../../../runtime/typecheck/embedded/embedded.go"}, refs)

	out, err := exec.Command("go", "list", "-deps",
		"github.com/monty-go/monty/session/...", "github.com/monty-go/monty/runtime", "github.com/monty-go/monty/runtime/typecheck").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		require.NotEqual(t, "github.com/monty-go/monty/runtime/typecheck/embedded", dep,
			"a library package imports the checker module: only programs that type-check should")
	}
}
