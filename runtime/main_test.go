package runtime_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// TestMain doubles as the child process of tests that need a fresh process:
// MONTY_TEST_CHILD_DUMP (continue a dumped REPL) and MONTY_TEST_FIRST_RESULT
// (time to first result with a warm cache).
func TestMain(m *testing.M) {
	if path := os.Getenv("MONTY_TEST_CHILD_DUMP"); path != "" {
		os.Exit(childContinueDump(path))
	}
	if os.Getenv("MONTY_TEST_FIRST_RESULT") != "" {
		os.Exit(childFirstResult())
	}
	os.Exit(m.Run())
}

func childInterp(ctx context.Context) (*runtime.Interpreter, error) {
	e, err := runtime.Default(ctx)
	if err != nil {
		return nil, err
	}
	return e.NewInterpreter(ctx)
}

func childContinueDump(path string) int {
	ctx := context.Background()
	it, err := childInterp(ctx)
	if err == nil {
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			var r *runtime.REPL
			if r, _, err = it.LoadREPL(ctx, b); err == nil {
				var v object.Value
				if v, err = r.Run(ctx, "greet('child')"); err == nil {
					fmt.Println(object.Repr(v))
					return 0
				}
			}
		}
	}
	fmt.Println("child:", err)
	return 1
}

func childFirstResult() int {
	ctx := context.Background()
	it, err := childInterp(ctx)
	if err == nil {
		var p *runtime.Program
		if p, err = it.Compile(ctx, "1 + 1"); err == nil {
			var v object.Value
			if v, err = p.Run(ctx); err == nil && v == object.Value(object.Int(2)) {
				return 0
			}
		}
	}
	fmt.Println("child:", err)
	return 1
}
