package mcpserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/mcpserver"
	"github.com/monty-go/monty/session/store/memstore"
)

// An MCP server and a client connected in memory: state defined by one
// execute_python call is used by the next.
func Example() {
	ctx := context.Background()
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper})
	if err != nil {
		log.Fatal(err)
	}
	defer keeper.Close()
	srv, err := mcpserver.New(mcpserver.Options{Executor: exec})
	if err != nil {
		log.Fatal(err)
	}
	serverSide, clientSide := mcp.NewInMemoryTransports()
	go srv.Run(ctx, serverSide)

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientSide, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for _, code := range []string{"def greet(name):\n    return 'hello ' + name", "greet('mcp')"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": code}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("error=%v text=%q\n", res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// error=false text=""
	// error=false text="'hello mcp'"
}
