package session_test

import (
	"context"
	"fmt"
	"time"

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

// A Manager keeps the live sessions of a process, and lets one caller at
// a time have each: a claim that finds a session held fails at once, or
// waits for it, as the caller's busy policy says.
func ExampleManager_Claim() {
	ctx := context.Background()
	m := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	defer m.Close()

	lease, err := m.Claim(ctx, "thread-1", session.ClaimOptions{Who: "an HTTP request"})
	if err != nil {
		panic(err)
	}
	s, err := lease.Session(ctx, nil)
	if err != nil {
		panic(err)
	}
	if _, err := s.Exec(ctx, "n = 1"); err != nil {
		panic(err)
	}

	// Another caller that will not wait is told who holds the session.
	_, err = m.Claim(ctx, "thread-1", session.ClaimOptions{Who: "an MCP call"})
	fmt.Println(err)

	lease.Release()
	again, err := m.Claim(ctx, "thread-1", session.ClaimOptions{Who: "an MCP call", Wait: time.Second})
	if err != nil {
		panic(err)
	}
	defer again.Release()
	s, err = again.Session(ctx, nil)
	if err != nil {
		panic(err)
	}
	res, err := s.Exec(ctx, "n + 1")
	if err != nil {
		panic(err)
	}
	fmt.Println(object.Repr(res.Value))
	// Output:
	// session: busy with another call: session thread-1 is held by an HTTP request; it is free again when that ends
	// 2
}
