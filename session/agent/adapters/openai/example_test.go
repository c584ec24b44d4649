package montyopenai_test

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/monty-go/monty/session/agent"
	montyopenai "github.com/monty-go/monty/session/agent/adapters/openai"
)

// An agent loop over Chat Completions: the model runs Python that calls a
// Go function, in the conversation's own session. (It needs an API key in
// OPENAI_API_KEY, so it is compiled but not run by go test.)
func Example() {
	adapter := montyopenai.New(exec)

	ctx := context.Background()
	client := openai.NewClient() // OPENAI_API_KEY from the environment
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4_1,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What do 12 teas cost?")},
		Tools:    adapter.ChatTools(),
	}
	for {
		comp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			panic(err)
		}
		msg := comp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println(msg.Content)
			return
		}
		answers, err := adapter.HandleChat(ctx, "conversation-1", msg) // Python errors are answers too
		if err != nil {
			panic(err) // ctx ended or the keeper is closed
		}
		params.Messages = append(params.Messages, msg.ToParam())
		params.Messages = append(params.Messages, answers...)
	}
}

// The same loop over the Responses API, chained with
// previous_response_id.
func ExampleAdapter_HandleResponse() {
	adapter := montyopenai.New(exec)

	ctx := context.Background()
	client := openai.NewClient()
	params := responses.ResponseNewParams{
		Model: openai.ChatModelGPT4_1,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is 2**100?")},
		Tools: adapter.ResponseTools(),
	}
	for {
		resp, err := client.Responses.New(ctx, params)
		if err != nil {
			panic(err)
		}
		outputs, err := adapter.HandleResponse(ctx, "conversation-1", resp)
		if err != nil {
			panic(err)
		}
		if len(outputs) == 0 {
			fmt.Println(resp.OutputText())
			return
		}
		params.PreviousResponseID = openai.String(resp.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}
	}
}

// exec is the executor of your tools, made once for the process: its
// registry has a Go function price (the price of an item, in euros), and
// it claims sessions from the process's keeper (package agent's examples
// make both).
var exec *agent.Executor
