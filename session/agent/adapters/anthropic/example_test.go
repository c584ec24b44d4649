package montyanthropic_test

import (
	"context"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montyanthropic "github.com/monty-go/monty/session/agent/adapters/anthropic"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// An agent loop over the Messages API: the model runs Python that calls a
// Go function, in the conversation's own session. (It needs an API key in
// ANTHROPIC_API_KEY, so it is compiled but not run by go test.)
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
	adapter := montyanthropic.New(exec)

	ctx := context.Background()
	client := anthropic.NewClient() // ANTHROPIC_API_KEY from the environment
	params := anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeSonnet4_5,
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What do 12 teas cost?"))},
		Tools:     adapter.Tools(),
	}
	for {
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			panic(err)
		}
		results, err := adapter.Handle(ctx, "conversation-1", msg) // Python errors are results too
		if err != nil {
			panic(err) // ctx ended or the executor is closed
		}
		if len(results) == 0 {
			for _, block := range msg.Content {
				fmt.Print(block.Text)
			}
			fmt.Println()
			return
		}
		params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(results...))
	}
}
