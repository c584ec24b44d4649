package session_test

import (
	"context"
	"fmt"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
)

// A session keeps its globals between calls, and in its store between
// processes: opened again by its id, it continues where it stopped.
func Example() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{}) // a directory, Redis or S3 in production
	opts := session.Options{Store: st}

	s, err := session.Open(ctx, "thread-1", opts)
	if err != nil {
		panic(err)
	}
	res, err := s.Exec(ctx, "def greet(name):\n    return 'hello ' + name\nvisits = 1")
	if err != nil {
		panic(err)
	}
	fmt.Println("saved:", res.Saved)
	res, err = s.Exec(ctx, "visits += 1\ngreet('world')")
	if err != nil {
		panic(err)
	}
	fmt.Println(object.Repr(res.Value))
	_ = s.Close(ctx)

	// Later, perhaps in another process sharing the store.
	s, err = session.Open(ctx, "thread-1", opts)
	if err != nil {
		panic(err)
	}
	defer s.Close(ctx)
	fmt.Println("found:", s.Restored().Found)
	res, err = s.Exec(ctx, "visits += 1\nprint(greet('again'))\nvisits")
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Output)
	fmt.Println(object.Repr(res.Value))
	fmt.Println(s.Globals(), s.State())
	// Output:
	// saved: true
	// 'hello world'
	// found: true
	// hello again
	// 3
	// [greet visits] map[visits:3]
}
