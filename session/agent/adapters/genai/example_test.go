package montygenai_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/monty-go/monty/session/agent"
	montygenai "github.com/monty-go/monty/session/agent/adapters/genai"
)

// An agent loop over generateContent: the model runs Python that calls a
// Go function, in the conversation's own session. (It needs an API key in
// GEMINI_API_KEY or GOOGLE_API_KEY, so it is compiled but not run by go
// test.)
func Example() {
	adapter := montygenai.New(exec)

	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{Backend: genai.BackendGeminiAPI}) // the key from the environment
	if err != nil {
		panic(err)
	}
	config := &genai.GenerateContentConfig{Tools: adapter.Tools()}
	contents := []*genai.Content{genai.NewContentFromText("What do 12 teas cost?", genai.RoleUser)}
	for {
		resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
		if err != nil {
			panic(err)
		}
		answers, err := adapter.Handle(ctx, "conversation-1", resp) // Python errors are answers too
		if err != nil {
			panic(err) // ctx ended or the keeper is closed
		}
		if len(answers) == 0 {
			fmt.Println(resp.Text())
			return
		}
		contents = append(contents, resp.Candidates[0].Content, genai.NewContentFromParts(answers, genai.RoleUser))
	}
}

// exec is the executor of your tools, made once for the process: its
// registry has a Go function price (the price of an item, in euros), and
// it claims sessions from the process's keeper (package agent's examples
// make both).
var exec *agent.Executor
