package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/mcpserver"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// connect serves exec over MCP in memory and returns a client session.
func connect(t testing.TB, exec *agent.Executor) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv, err := mcpserver.New(mcpserver.Options{Executor: exec})
	if err != nil {
		t.Fatal(err)
	}
	serverSide, clientSide := mcp.NewInMemoryTransports()
	go srv.Run(ctx, serverSide)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// TestCorruptStateOverMCP: a session whose stored state is damaged or
// signed with another key starts empty and the tool result says so; with
// FailOnCorruptState the call is a tool error that points to
// reset_session, which repairs the session.
func TestCorruptStateOverMCP(t *testing.T) {
	ctx := context.Background()
	// A blob signed with another key, under the default session's id.
	other := memstore.New(memstore.Options{})
	theirsKeeper := session.NewManager(session.Options{Store: other}, session.ManagerOptions{})
	theirs, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: theirsKeeper, Session: session.Options{Store: other, SigningKey: []byte("another key")}})
	if err != nil {
		t.Fatal(err)
	}
	defer theirsKeeper.Close()
	if _, err := theirs.Execute(ctx, mcpserver.DefaultThreadKey, []byte(`{"code": "secret = 1"}`)); err != nil {
		t.Fatal(err)
	}
	foreign, err := other.Get(ctx, mcpserver.DefaultThreadKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, fail := range []bool{false, true} {
		for name, blob := range map[string][]byte{"foreign": foreign.Data, "damaged": []byte("MGOS\x09garbage")} {
			st := memstore.New(memstore.Options{})
			if _, err := st.Put(ctx, mcpserver.DefaultThreadKey, blob, store.Cond{}); err != nil {
				t.Fatal(err)
			}
			keeper := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
			exec, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper, Session: session.Options{Store: st, SigningKey: []byte("my key")}, FailOnCorruptState: fail})
			if err != nil {
				t.Fatal(err)
			}
			defer keeper.Close()
			cs := connect(t, exec)
			text, isErr := call(t, cs, "execute_python", map[string]any{"code": "'secret' in locals()"})
			if !fail {
				if isErr || !strings.HasPrefix(text, "Note: this session's saved state could not be loaded") || !strings.HasSuffix(text, "False") {
					t.Fatalf("%s: %v %q", name, isErr, text)
				}
				if text, _ := call(t, cs, "execute_python", map[string]any{"code": "1"}); text != "1" {
					t.Fatalf("%s: second call %q", name, text)
				}
				continue
			}
			if !isErr || !strings.Contains(text, "cannot be loaded") || !strings.Contains(text, "reset_session") {
				t.Fatalf("%s, fail mode: %v %q", name, isErr, text)
			}
			if text, isErr := call(t, cs, "reset_session", map[string]any{}); isErr {
				t.Fatalf("%s: reset_session: %q", name, text)
			}
			if text, isErr := call(t, cs, "execute_python", map[string]any{"code": "2"}); isErr || text != "2" {
				t.Fatalf("%s: after reset_session: %v %q", name, isErr, text)
			}
		}
	}
}
