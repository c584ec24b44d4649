package tools_test

import (
	"context"
	"fmt"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// Cart is a Go type the example offers to Python as a host class.
type Cart struct {
	Owner string   `json:"owner"`
	Items []string `json:"items"`
}

// Add adds an item and returns how many the cart holds.
func (c *Cart) Add(item string) int {
	c.Items = append(c.Items, item)
	return len(c.Items)
}

// Offer a Go struct with methods to Python: its fields are attributes read
// from the Go value, its methods run on it, and help() describes it.
func ExampleNewClass() {
	ctx := context.Background()
	cart := tools.MustMethod(tools.Schema{Name: "add", Description: "Add an item.", Params: []tools.Param{{Name: "item"}}}, (*Cart).Add)
	class, err := tools.NewClass("Cart", "A shopping cart.", (*Cart)(nil), cart)
	if err != nil {
		panic(err)
	}
	reg, _ := tools.NewRegistry()
	if err := reg.RegisterClass(class); err != nil {
		panic(err)
	}
	mine := &Cart{Owner: "ada"}
	obj, err := reg.ObjectKey(mine, "cart-of-ada") // the same key finds it again after a restart
	if err != nil {
		panic(err)
	}

	s, err := session.Open(ctx, "shop", session.Options{Store: memstore.New(memstore.Options{}), Host: reg.Host()})
	if err != nil {
		panic(err)
	}
	defer s.Close(ctx)
	res, err := s.ExecWith(ctx, "cart.add('tea')\ncart.add('jam')\nf'{cart.owner}: {cart.items}'", runtime.Input{Name: "cart", Value: obj})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Value)
	fmt.Println(mine.Items)
	fmt.Println(class.Help())
	// Output:
	// ada: ['tea', 'jam']
	// [tea jam]
	// class Cart
	//     A shopping cart.
	//
	// Attributes (read from the host at each access):
	//     owner: str
	//     items: list
	//
	// Methods:
	//     add(item: str)
	//         Add an item.
}
