package montyanthropic

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/tools"
)

// A schema's keywords other than properties and required reach the API
// too (the executor's schemas have none today).
func TestSchemaKeepsEveryKeyword(t *testing.T) {
	want := `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],` +
		`"additionalProperties":false,"$defs":{"x":{"type":"integer"}}}`
	got, err := json.Marshal(schema(tools.Tool{Name: "t", Parameters: json.RawMessage(want)}))
	require.NoError(t, err)
	assert.JSONEq(t, want, string(got))

	assert.Panics(t, func() { schema(tools.Tool{Name: "t", Parameters: json.RawMessage(`[]`)}) })
}
