// Command agent shows the execute_python tool as an LLM agent would use
// it: three Go host functions (one async) offered to Python, and a
// two-call conversation in which the second call uses a Python function
// the first one defined. The model's tool calls are scripted here; in a
// real agent they come from the model, and the text results go back to it.
//
//	go run ./examples/agent
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// Product is what get_inventory returns; Python sees dicts.
type Product struct {
	Name  string  `json:"name"`
	Price float64 `json:"price"`
}

var inventory = map[string][]Product{
	"tea":    {{"sencha", 12.5}, {"assam", 8}, {"oolong", 15}},
	"coffee": {{"arabica", 14}, {"robusta", 9.5}},
}

var ratings = map[string]float64{"sencha": 4.6, "assam": 4.1, "oolong": 4.8, "arabica": 4.4, "robusta": 3.9}

// functions are the host functions: plain Go functions with schemas.
func functions() (*tools.Registry, error) {
	getInventory, err := tools.Func(tools.Schema{
		Name: "get_inventory", Category: "shop",
		Description: "List the products of a category with their prices in USD.",
		Params:      []tools.Param{{Name: "category", Description: "tea or coffee"}},
		Returns:     "a list of dicts with name and price",
	}, func(category string) ([]Product, error) {
		items, ok := inventory[category]
		if !ok {
			return nil, fmt.Errorf("unknown category %q", category)
		}
		return items, nil
	})
	if err != nil {
		return nil, err
	}
	convert, err := tools.Func(tools.Schema{
		Name: "convert_currency", Category: "money",
		Description: "Convert an amount in USD to another currency.",
		Params: []tools.Param{
			{Name: "amount", Description: "amount in USD"},
			{Name: "to", Description: "currency code", Default: "EUR"},
		},
	}, func(amount float64, to string) (float64, error) {
		rate, ok := map[string]float64{"EUR": 0.9, "GBP": 0.8}[to]
		if !ok {
			return 0, fmt.Errorf("no rate for %s", to)
		}
		return amount * rate, nil
	})
	if err != nil {
		return nil, err
	}
	convert.ErrorType = "ValueError"
	// fetch_rating stands for a slow remote call: async, so the code can
	// await several at once with asyncio.gather.
	fetchRating, err := tools.Func(tools.Schema{
		Name: "fetch_rating", Category: "shop",
		Description: "Fetch a product's customer rating (0-5) from the reviews service.",
		Params:      []tools.Param{{Name: "product"}},
	}, func(ctx context.Context, product string) (float64, error) {
		select {
		case <-time.After(50 * time.Millisecond):
			return ratings[product], nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	if err != nil {
		return nil, err
	}
	fetchRating.Async = true
	return tools.NewRegistry(getInventory, convert, fetchRating)
}

// conversation is what the model sends, call by call.
var conversation = []string{
	`items = get_inventory('tea')
def best_value(items, scores):
    """The item with the most rating points per dollar."""
    return max(zip(items, scores), key=lambda p: p[1] / p[0]['price'])[0]
print(len(items), 'teas')`,

	`import asyncio
scores = await asyncio.gather(*[fetch_rating(i['name']) for i in items])
best = best_value(items, scores)
print('best value:', best['name'])
round(convert_currency(best['price']), 2)`,
}

func run(ctx context.Context, w io.Writer) error {
	fns, err := functions()
	if err != nil {
		return err
	}
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{
		Keeper:    keeper,
		Functions: fns,
	})
	if err != nil {
		return err
	}
	defer keeper.Close()

	tool := exec.Tool() // offer this to the model
	fmt.Fprintf(w, "tool: %s\n", tool.Name)
	for i, code := range conversation {
		args, _ := json.Marshal(map[string]string{"code": code})
		res, err := exec.Execute(ctx, "conversation-1", args)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "--- call %d result:\n%s\n", i+1, res.Text)
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
