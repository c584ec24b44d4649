package montyanthropic_test

import (
	"context"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/monty-go/monty/session/agent"
	montyanthropic "github.com/monty-go/monty/session/agent/adapters/anthropic"
)

// An agent loop over the Messages API: the model runs Python that calls a
// Go function, in the conversation's own session. (It needs an API key in
// ANTHROPIC_API_KEY, so it is compiled but not run by go test.)
func Example() {
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
			panic(err) // ctx ended or the keeper is closed
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

// exec is the executor of your tools, made once for the process: its
// registry has a Go function price (the price of an item, in euros), and
// it claims sessions from the process's keeper (package agent's examples
// make both).
var exec *agent.Executor
