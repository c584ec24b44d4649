package montygenkit_test

import (
	"context"
	"fmt"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montygenkit "github.com/monty-go/monty/session/agent/adapters/genkit"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// A Genkit generate loop whose model runs Python that calls a Go
// function, in the conversation's own session. (It needs a real model
// from one of Genkit's plugins, so it is compiled but not run by go
// test.)
func Example() {
	price := tools.MustFunc(tools.Schema{Name: "price", Description: "Price of an item, in euros.",
		Params: []tools.Param{{Name: "item"}}},
		func(item string) (float64, error) { return map[string]float64{"tea": 3.5}[item], nil })
	fns, _ := tools.NewRegistry(price)
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
	g := genkit.Init(ctx /* , genkit.WithPlugins(...), genkit.WithDefaultModel(...) */)
	// Python errors go back to the model as tool output; an error here is
	// the model's, or ctx ended, or the executor is closed.
	resp, err := genkit.Generate(ctx, g,
		ai.WithPrompt("What do 12 teas cost?"),
		ai.WithTools(montygenkit.New(exec).Tools("conversation-1")...), // execute_python, resume_python
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Text())
}
