package typecheck_test

import (
	"context"
	"fmt"

	"github.com/monty-go/monty/runtime/typecheck"
)

// Check code against the signatures of the functions the host provides,
// before running it.
func ExampleChecker_Check() {
	ctx := context.Background()
	checker, err := typecheck.Default(ctx)
	if err != nil {
		panic(err)
	}
	res, err := checker.Check(ctx, typecheck.Request{
		Code:   "weather = get_weather('Oslo', days='3')\nprint(weather['temp'] + 1)\n",
		Stubs:  "def get_weather(city: str, days: int = 1) -> dict[str, float]: ...\n",
		Format: typecheck.Concise,
	})
	if err != nil {
		panic(err)
	}
	for _, d := range res.Diagnostics {
		fmt.Println(d.Line, d.Rule)
	}
	fmt.Print(res.Text)
	// Output:
	// 1 invalid-argument-type
	// main.py:1:31: error[invalid-argument-type] Argument to function `get_weather` is incorrect: Expected `int`, found `Literal["3"]`
}

// A REPL or session checks each snippet against what the earlier ones
// defined.
func ExampleContext() {
	ctx := context.Background()
	checker, err := typecheck.Default(ctx)
	if err != nil {
		panic(err)
	}
	var history typecheck.Context
	for _, code := range []string{
		"def area(r: float) -> float:\n    return 3.14 * r * r\n",
		"area('wide')\n",
	} {
		req := typecheck.Request{Code: code, Format: typecheck.Concise}
		history.Apply(&req)
		res, err := checker.Check(ctx, req)
		if err != nil {
			panic(err)
		}
		if !res.Clean() {
			fmt.Print(res.Text)
			continue
		}
		// ... run the code, then:
		history.Commit(code)
	}
	// Output:
	// main.py:1:6: error[invalid-argument-type] Argument to function `area` is incorrect: Expected `float`, found `Literal["wide"]`
}
