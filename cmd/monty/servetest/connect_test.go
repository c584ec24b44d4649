package servetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/mcpclient/mcptest"
)

// TestServeConnect: monty serve --connect offers the operator's MCP
// server (mcp-server-time) to every API key's code: one /exec per key
// awaits its tool, and a type-checked /exec with a wrong argument is
// refused (422) from the stubs of the tool's input schema.
func TestServeConnect(t *testing.T) {
	const keyA, keyB = "connect-key-a", "connect-key-b"
	in := serve(t, "--store", "mem:", "--api-key", keyA, "--api-key", keyB,
		"--connect", "time="+strings.Join(mcptest.Time(t), " "))
	assert.Contains(t, in.log(), `"msg":"mcp server connected","server":"time"`)
	for _, key := range []string{keyA, keyB} {
		status, _, data, err := in.do("POST", "/exec", mustJSON(map[string]any{
			"code": "now = await time.get_current_time(timezone='UTC')\nprint(now['timezone'])\nsorted(now)",
		}), "x-api-key", key, "Content-Type", "application/json")
		require.NoError(t, err)
		require.Equal(t, 200, status, string(data))
		var res execResult
		require.NoError(t, json.Unmarshal(data, &res))
		assert.Nil(t, res.Error, string(data))
		assert.Equal(t, "UTC\n", res.Stdout)
		assert.JSONEq(t, `["datetime", "day_of_week", "is_dst", "timezone"]`, string(res.Result))
	}
	status, _, data, err := in.do("POST", "/exec", mustJSON(map[string]any{
		"code": "await time.get_current_time(tz='UTC')", "type_check": true,
	}), "x-api-key", keyA, "Content-Type", "application/json")
	require.NoError(t, err)
	assert.Equal(t, 422, status, string(data))
	assert.Contains(t, string(data), "tz")
}
