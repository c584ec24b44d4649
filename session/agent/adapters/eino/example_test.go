package montyeino_test

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montyeino "github.com/monty-go/monty/session/agent/adapters/eino"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// chatModel is the tool-calling chat model of your choice, from one of
// Eino's model packages.
var chatModel model.ToolCallingChatModel

// A ReAct agent whose model runs Python that calls a Go function, in the
// conversation's own session. (It needs a real chat model, so it is
// compiled but not run by go test.)
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
	// the model's, or ctx ended, or the executor is closed.
	answer, err := bot.Generate(ctx, []*schema.Message{schema.UserMessage("What do 12 teas cost?")})
	if err != nil {
		panic(err)
	}
	fmt.Println(answer.Content)
}
