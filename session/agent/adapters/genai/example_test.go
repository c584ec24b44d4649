package montygenai_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montygenai "github.com/monty-go/monty/session/agent/adapters/genai"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// An agent loop over generateContent: the model runs Python that calls a
// Go function, in the conversation's own session. (It needs an API key in
// GEMINI_API_KEY or GOOGLE_API_KEY, so it is compiled but not run by go
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
			panic(err) // ctx ended or the executor is closed
		}
		if len(answers) == 0 {
			fmt.Println(resp.Text())
			return
		}
		contents = append(contents, resp.Candidates[0].Content, genai.NewContentFromParts(answers, genai.RoleUser))
	}
}
