package main

import (
	"context"
	"os"
)

func Example() {
	if err := run(context.Background(), os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// tool: execute_python
	// --- call 1 result:
	// 3 teas
	// --- call 2 result:
	// best value: assam
	// 7.2
}
