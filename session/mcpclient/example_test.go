package mcpclient_test

import (
	"context"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/session/mcpclient"
	"github.com/monty-go/monty/session/tools"
)

// Offer the tools of the reference time server (mcp-server-time, run by
// uvx) to Python as the async methods of `time`, leaving one out. A
// session whose host is reg.Host() then runs
// `now = await time.get_current_time(timezone="UTC")`.
func ExampleAdd() {
	ctx := context.Background()
	reg, err := tools.NewRegistry()
	if err != nil {
		panic(err)
	}
	ns, err := mcpclient.Add(ctx, reg, mcpclient.Server{
		Name: "time",
		Transport: func() (mcp.Transport, error) { // called again to reconnect
			return &mcp.CommandTransport{Command: exec.Command("uvx", "mcp-server-time")}, nil
		},
		Deny: []string{"convert_time"},
	})
	if err != nil {
		panic(err)
	}
	defer ns.Close()
}
