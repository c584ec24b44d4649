package montyeino_test

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/monty-go/monty/session/agent"
	montyeino "github.com/monty-go/monty/session/agent/adapters/eino"
)

// chatModel is the tool-calling chat model of your choice, from one of
// Eino's model packages.
var chatModel model.ToolCallingChatModel

// A ReAct agent whose model runs Python that calls a Go function, in the
// conversation's own session. (It needs a real chat model, so it is
// compiled but not run by go test.)
func Example() {
	ctx := context.Background()
	bot, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: chatModel,
		ToolsConfig: compose.ToolsNodeConfig{
			Tools:               montyeino.New(exec).Tools("conversation-1"), // execute_python, resume_python
			ExecuteSequentially: true,                                        // a message's calls in the model's order
		},
	})
	if err != nil {
		panic(err)
	}
	// Python errors go back to the model as tool output; an error here is
	// the model's, or ctx ended, or the keeper is closed.
	answer, err := bot.Generate(ctx, []*schema.Message{schema.UserMessage("What do 12 teas cost?")})
	if err != nil {
		panic(err)
	}
	fmt.Println(answer.Content)
}

// exec is the executor of your tools, made once for the process: its
// registry has a Go function price (the price of an item, in euros), and
// it claims sessions from the process's keeper (package agent's examples
// make both).
var exec *agent.Executor
