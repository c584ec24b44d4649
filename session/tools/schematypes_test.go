package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every JSON schema form has its annotation, and nothing a schema says
// can make the stub module invalid or unbounded.
func TestSchemaAnnotations(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 20) + `{"type":"string"}` + strings.Repeat("}", 20)
	for schema, want := range map[string]string{
		`{"type":"string"}`:                                          "str",
		`{"type":["string","null"]}`:                                 "str | None",
		`{"anyOf":[{"type":"integer"},{"type":"number"}]}`:           "int | float",
		`{"oneOf":[{"type":"integer"},{}]}`:                          "Any",
		`{"enum":["a","it's",1,true,null]}`:                          `Literal['a', "it's", 1, True, None]`,
		`{"enum":[1.5]}`:                                             "Any",
		`{"const":"x"}`:                                              "Literal['x']",
		`{"type":"array"}`:                                           "list[Any]",
		`{"type":"array","items":{"type":"boolean"}}`:                "list[bool]",
		`{"type":"object"}`:                                          "dict[str, Any]",
		`{"type":"object","additionalProperties":{"type":"number"}}`: "dict[str, float]",
		`{"$ref":"#/$defs/X"}`:                                       "Any",
		`{"type":"bogus"}`:                                           "Any",
		`"not an object"`:                                            "Any",
		deep:                                                         "list[list[list[list[list[list[list[list[list[Any]]]]]]]]]",
	} {
		g := newSchemaTypes(stubNames{}, map[string]bool{})
		assert.Equal(t, want, g.annotation(json.RawMessage(schema), "x"), schema)
	}
	// Objects with properties become TypedDicts with any key, quoted; a
	// name the module already defines is not reused.
	g := newSchemaTypes(stubNames{}, map[string]bool{"_f": true})
	got := g.annotation(json.RawMessage(`{"properties":{"user-id":{"type":"integer"},"a\"b":{"type":"string"}},"required":["user-id"]}`), "f")
	assert.Equal(t, "_f_", got)
	assert.Equal(t, "\n_f_ = TypedDict(\"_f_\", {\"a\\\"b\": NotRequired[str], \"user-id\": int})\n", g.declarations())
	assert.Equal(t, map[string]bool{"TypedDict": true, "NotRequired": true}, g.used)
}
