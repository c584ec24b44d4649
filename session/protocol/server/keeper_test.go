package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestOneClaimForEverySurface: in one process, a monty.v1 load, an MCP
// call (the executor's, as monty mcp keeps sessions) and an /exec of one
// session queue behind one claim of the process's keeper, and run one
// after another, each on what the one before left, once it is released.
func TestOneClaimForEverySurface(t *testing.T) {
	st := memstore.New(memstore.Options{})
	keeper := newKeeper(t, st)
	ws, api := sharedServersOf(t, nil, keeper)
	ns := apikey.NamespaceOf(key)
	mcpExec, err := agent.NewExecutor(agent.ExecutorOptions{
		Keeper: keeper,
		// The API's layout and keys, so that the MCP call's session_id
		// is the API's session id.
		StoreID: func(_, sid string) (string, error) { return apikey.StoreID(ns, sid), nil },
		Keys:    func(id string) ([]byte, [][]byte) { return apikey.StoreKeys([]byte("signing-key-0123456789"), id) },
	})
	require.NoError(t, err)

	status, out := exec(t, api, key, "shared", "n = 0")
	require.Equal(t, http.StatusOK, status, "%v", out)
	id := apikey.StoreID(ns, "shared")
	held, err := keeper.Claim(context.Background(), id, session.ClaimOptions{Who: "the test"})
	require.NoError(t, err)
	queued := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return keeper.Claims(id) == n }, 10*time.Second, time.Millisecond)
	}

	// monty.v1 first (it waits for a holder only a moment), then MCP, then
	// /exec: each is refused nothing, and waits.
	v1 := make(chan object.Value, 1)
	go func() {
		c := ws.dial(t)
		ev := c.turn(load([]byte("shared")))
		if ev.GetOk() == nil {
			t.Errorf("monty.v1 load: %v", ev)
			v1 <- nil
			return
		}
		v := value(t, c.turn(feed("n += 100\nn")))
		ws.park(t, c)
		v1 <- v
	}()
	queued(2)
	mcp := make(chan string, 1)
	go func() {
		args, _ := json.Marshal(map[string]string{"code": "n += 10\nn", "session_id": "shared"})
		res, err := mcpExec.Execute(context.Background(), "thread", args)
		if err != nil {
			t.Errorf("MCP call: %v", err)
			mcp <- ""
			return
		}
		mcp <- res.Text
	}()
	queued(3)
	api1 := make(chan map[string]any, 1)
	go func() {
		status, out := exec(t, api, key, "shared", "n += 1\nn")
		if status != http.StatusOK {
			t.Errorf("/exec: %d %v", status, out)
		}
		api1 <- out
	}()
	queued(4)
	select {
	case <-v1:
		t.Fatal("monty.v1 ran beside the claim")
	case <-mcp:
		t.Fatal("the MCP call ran beside the claim")
	case <-api1:
		t.Fatal("/exec ran beside the claim")
	default:
	}
	held.Release()

	// In the order they queued, each on the one before.
	assert.Equal(t, object.Int(100), <-v1)
	assert.Equal(t, "110", <-mcp)
	assert.EqualValues(t, 111, (<-api1)["result"])
	assert.Zero(t, keeper.Claims(id))
}
