package main

import (
	"context"
	"os"
)

// The three fetch_rating calls run concurrently (asyncio.gather), so their
// results come in any order.
func Example() {
	if err := run(context.Background(), os.Stdout); err != nil {
		panic(err)
	}
	// Unordered output:
	// tool: execute_python
	// --- call 1 result:
	// [get_inventory returned [{"name":"sencha","price":12.5},{"name":"assam","price":8.0},{"name":"oolong","price":15.0}]]
	// 3 teas
	// --- call 2 result:
	// [fetch_rating returned 4.8]
	// [fetch_rating returned 4.1]
	// [fetch_rating returned 4.6]
	// best value: assam
	// [convert_currency returned 7.2]
	// 7.2
}
