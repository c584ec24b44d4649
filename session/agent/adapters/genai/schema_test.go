package montygenai

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/tools"
)

// A schema reaches the SDK whole, every keyword, and each caller gets a
// copy of its own.
func TestSchemaKeepsEveryKeyword(t *testing.T) {
	want := `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],` +
		`"additionalProperties":false,"$defs":{"x":{"type":"integer"}}}`
	tool := tools.Tool{Name: "t", Parameters: json.RawMessage(want)}
	s := schema(tool)
	got, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, want, string(got))
	s["type"] = "changed"
	assert.Equal(t, "object", schema(tool)["type"])

	assert.Panics(t, func() { schema(tools.Tool{Name: "t", Parameters: json.RawMessage(`[]`)}) })
	assert.Panics(t, func() { schema(tools.Tool{Name: "t", Parameters: json.RawMessage(`null`)}) })
}
