package mcpserver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/internal/sessionbench"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
)

// mcpSurface is the default session of an MCP client continued by
// execute_python, over an executor on a directory store
// (sessionbench.Surface); reset_session and the store put it back.
type mcpSurface struct {
	ctx context.Context
	cs  *mcp.ClientSession
	st  store.Store
}

// call calls tool and returns its text, or an error when it failed.
func (s *mcpSurface) call(tool string, args map[string]any) (string, error) {
	res, err := s.cs.CallTool(s.ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

func (s *mcpSurface) Exec(code string) (string, error) {
	return s.call("execute_python", map[string]any{"code": code})
}

func (s *mcpSurface) Save() (sessionbench.Entries, error) {
	return sessionbench.StoreEntries(s.ctx, s.st)
}

// Restore resets the session (the server drops it), then puts the entries
// in the store for the next call to load.
func (s *mcpSurface) Restore(entries sessionbench.Entries) error {
	if _, err := s.call("reset_session", map[string]any{}); err != nil {
		return err
	}
	return sessionbench.ReplaceEntries(s.ctx, s.st, entries)
}

// BenchmarkContinueSession measures an execute_python call of one more
// snippet in a session that already ran 10, 300 or 1,000 (package
// sessionbench), over the in-memory transport and a directory store, as
// `monty mcp --store DIR` continues an agent's session: the cost of a call
// at the 1,000th snippet against the 10th.
//
//	go test -run '^$' -bench 'ContinueSession' -benchtime 40x ./session/mcpserver/
func BenchmarkContinueSession(b *testing.B) {
	st, err := dirstore.Open(b.TempDir(), dirstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper, Session: session.Options{Store: st, SigningKey: []byte("bench")}})
	if err != nil {
		b.Fatal(err)
	}
	defer keeper.Close()
	sessionbench.Run(b, "mcp", &mcpSurface{ctx: context.Background(), cs: connect(b, exec), st: st})
}
