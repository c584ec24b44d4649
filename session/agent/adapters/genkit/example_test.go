package montygenkit_test

import (
	"context"
	"fmt"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/monty-go/monty/session/agent"
	montygenkit "github.com/monty-go/monty/session/agent/adapters/genkit"
)

// A Genkit generate loop whose model runs Python that calls a Go
// function, in the conversation's own session. (It needs a real model
// from one of Genkit's plugins, so it is compiled but not run by go
// test.)
func Example() {
	ctx := context.Background()
	g := genkit.Init(ctx /* , genkit.WithPlugins(...), genkit.WithDefaultModel(...) */)
	// Python errors go back to the model as tool output; an error here is
	// the model's, or ctx ended, or the keeper is closed.
	resp, err := genkit.Generate(ctx, g,
		ai.WithPrompt("What do 12 teas cost?"),
		ai.WithTools(montygenkit.New(exec).Tools("conversation-1")...), // execute_python, resume_python
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Text())
}

// exec is the executor of your tools, made once for the process: its
// registry has a Go function price (the price of an item, in euros), and
// it claims sessions from the process's keeper (package agent's examples
// make both).
var exec *agent.Executor
