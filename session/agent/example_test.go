package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// The execute_python tool for one conversation: state persists between
// calls, and Go errors are Python exceptions.
func ExampleExecutor_Execute() {
	double := tools.MustFunc(tools.Schema{Name: "double", Params: []tools.Param{{Name: "n"}}},
		func(n int) (int, error) {
			if n < 0 {
				return 0, fmt.Errorf("negative: %d", n)
			}
			return 2 * n, nil
		})
	fns, _ := tools.NewRegistry(double)
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{
		Keeper:    keeper,
		Functions: fns,
	})
	if err != nil {
		panic(err)
	}
	defer keeper.Close()
	ctx := context.Background()
	for _, code := range []string{
		"def quad(n):\n    return double(double(n))",
		"print('quad(5) is', quad(5))",
		"try:\n    quad(-1)\nexcept RuntimeError as e:\n    msg = str(e)\nmsg",
	} {
		args, _ := json.Marshal(map[string]string{"code": code})
		res, err := exec.Execute(ctx, "thread-1", args)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%q\n", res.Text)
	}
	// Output:
	// ""
	// "[double returned 10]\n[double returned 20]\nquad(5) is 20"
	// "[double raised RuntimeError: negative: -1]\n'negative: -1'"
}

// Stream a run's events while it happens.
func ExampleExecutor_ExecuteEvents() {
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper})
	if err != nil {
		panic(err)
	}
	defer keeper.Close()
	var kinds []string
	_, err = exec.ExecuteEvents(context.Background(), "t", json.RawMessage(`{"code": "print('hi')\n1 + 1"}`),
		func(e agent.Event) { kinds = append(kinds, string(e.Type)) })
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Join(kinds, " "))
	// Output:
	// run_started text_start text_content text_end run_finished
}
