package tools_test

import (
	"context"
	"fmt"

	"github.com/monty-go/monty/session/tools"
)

// Adapt a plain Go function, with a context, a default and a typed error.
func ExampleFunc() {
	greet, err := tools.Func(tools.Schema{
		Name:        "greet",
		Description: "Greet someone.",
		Params: []tools.Param{
			{Name: "name", Description: "who to greet"},
			{Name: "punctuation", Default: "!"},
		},
	}, func(ctx context.Context, name, punctuation string) (string, error) {
		if name == "" {
			return "", fmt.Errorf("name is empty")
		}
		return "Hello, " + name + punctuation, nil
	})
	if err != nil {
		panic(err)
	}
	greet.ErrorType = "ValueError" // Go errors raise ValueError
	fmt.Println(greet.Signature())
	fmt.Println(string(greet.JSONSchema()))
	// Output:
	// greet(name: str, punctuation: str = '!')
	// {"type":"object","properties":{"name":{"type":"string","description":"who to greet"},"punctuation":{"type":"string","default":"!"}},"required":["name"]}
}
