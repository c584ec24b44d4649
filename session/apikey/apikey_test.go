package apikey_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/monty-go/monty/session/apikey"
)

func TestNamespaces(t *testing.T) {
	open := apikey.New(nil)
	ns, ok := open.Namespace("")
	assert.True(t, ok)
	assert.Equal(t, apikey.Public, ns, "no keys: everyone shares the public namespace")

	keys := apikey.New([]string{"key-one-1234", "key-two-5678"})
	a, ok := keys.Namespace("key-one-1234")
	assert.True(t, ok)
	b, ok := keys.Namespace("key-two-5678")
	assert.True(t, ok)
	assert.NotEqual(t, a, b)
	again, _ := apikey.New([]string{"key-two-5678", "key-one-1234"}).Namespace("key-one-1234")
	assert.Equal(t, a, again, "the namespace depends on the key alone, so every instance agrees")
	for _, bad := range []string{"", "key-one-123", "KEY-ONE-1234"} {
		_, ok := keys.Namespace(bad)
		assert.False(t, ok, bad)
	}
	assert.Equal(t, 2, keys.Len())
}

func TestFromRequest(t *testing.T) {
	r, _ := http.NewRequest("GET", "/", nil)
	assert.Empty(t, apikey.FromRequest(r))
	r.Header.Set("Authorization", "bearer  tok-1 ")
	assert.Equal(t, "tok-1", apikey.FromRequest(r))
	r.Header.Set("Authorization", "Basic dXNlcg==")
	assert.Empty(t, apikey.FromRequest(r), "only bearer tokens")
	r.Header.Set("X-Api-Key", "key-2")
	assert.Equal(t, "key-2", apikey.FromRequest(r), "x-api-key comes first")
}
