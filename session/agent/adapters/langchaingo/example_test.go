package montylangchaingo_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms/fake"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	montylangchaingo "github.com/monty-go/monty/session/agent/adapters/langchaingo"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// A LangChainGo agent runs Python that calls a Go function, in the
// conversation's own session. The model here is LangChainGo's fake LLM
// replaying a ReAct exchange, so that the example runs offline; any
// llms.Model (openai.New(), anthropic.New(), ...) takes its place.
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

	llm := fake.NewFakeLLM([]string{
		"Thought: I'll compute it.\nAction: execute_python\nAction Input: 12 * price('tea')",
		"Thought: I now know the final answer\nFinal Answer: 12 teas cost 42 euros.",
	})
	pythonTools := montylangchaingo.New(exec).Tools("conversation-1") // execute_python, resume_python
	executor := agents.NewExecutor(agents.NewOneShotAgent(llm, pythonTools))
	// Python errors are tool outputs the model reads; err is for a context
	// that ended or a closed keeper.
	answer, err := chains.Run(context.Background(), executor, "What do 12 teas cost?")
	if err != nil {
		panic(err)
	}
	fmt.Println(answer)
	// Output: 12 teas cost 42 euros.
}
