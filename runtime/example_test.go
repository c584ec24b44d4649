package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// Compile once, run many times with different inputs.
func ExampleProgram_Run() {
	ctx := context.Background()
	engine, _ := runtime.Default(ctx)
	it, _ := engine.NewInterpreter(ctx)
	defer it.Close(ctx)

	prog, _ := it.Compile(ctx, "print('hello', name)\nlen(name) * 2", runtime.WithInputs("name"))
	v, err := prog.Run(ctx, object.Str("monty"))
	fmt.Println(v, err)
	fmt.Print(it.Output())
	// Output:
	// 10 <nil>
	// hello monty
}

// Python exceptions come back as *runtime.Error with a traceback.
func ExampleError() {
	ctx := context.Background()
	engine, _ := runtime.Default(ctx)
	it, _ := engine.NewInterpreter(ctx)
	defer it.Close(ctx)

	prog, _ := it.Compile(ctx, "def f(x):\n    return 1 / x\nf(0)")
	_, err := prog.Run(ctx)
	var pyErr *runtime.Error
	if errors.As(err, &pyErr) {
		fmt.Println(pyErr.Type, "at line", pyErr.Line())
		fmt.Println(strings.Contains(pyErr.Text, "Traceback (most recent call last):"))
	}
	// Output:
	// ZeroDivisionError at line 2
	// true
}

// A Host offers Go functions to Python; async ones run concurrently.
func ExampleHost() {
	ctx := context.Background()
	engine, _ := runtime.Default(ctx)
	it, _ := engine.NewInterpreter(ctx)
	defer it.Close(ctx)

	double := func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
		return args[0].(object.Int) * 2, nil
	}
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"double":       {Func: double},
		"double_later": {Func: double, Async: true},
	}}
	prog, _ := it.Compile(ctx, `
import asyncio
async def main():
    return await asyncio.gather(double_later(1), double_later(2))
[double(10)] + asyncio.run(main())
`)
	v, err := host.Run(ctx, prog)
	fmt.Println(object.Repr(v), err)
	// Output: [20, 2, 4] <nil>
}

// A REPL keeps state between feeds, and its dump continues anywhere.
func ExampleREPL() {
	ctx := context.Background()
	engine, _ := runtime.Default(ctx)
	it, _ := engine.NewInterpreter(ctx)
	defer it.Close(ctx)

	repl, _ := it.NewREPL(ctx)
	_, _ = repl.Run(ctx, "def greet(n):\n    return 'hi ' + n")
	dump, _ := repl.Dump(ctx)

	other, _ := engine.NewInterpreter(ctx)
	defer other.Close(ctx)
	restored, _, _ := other.LoadREPL(ctx, dump)
	v, _ := restored.Run(ctx, "greet('again')")
	fmt.Println(v)
	// Output: hi again
}

// Limits raise errors you can test with errors.Is; the interpreter stays
// usable afterwards.
func ExampleLimits() {
	ctx := context.Background()
	engine, _ := runtime.Default(ctx)
	it, _ := engine.NewInterpreter(ctx)
	defer it.Close(ctx)

	it.SetLimits(runtime.Limits{MaxDuration: 20 * time.Millisecond})
	prog, _ := it.Compile(ctx, "while True:\n    pass")
	_, err := prog.Run(ctx)
	fmt.Println(errors.Is(err, runtime.ErrTimeLimit))
	// Output: true
}
