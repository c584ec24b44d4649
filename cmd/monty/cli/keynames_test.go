//go:build !monty_lean

package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamedKeys: "NAME=KEY" names a key for the audit of approvals; an
// entry whose part before "=" is not a name, or whose key would be
// shorter than 8 characters (a base64 key ending in "="), is a key as it
// is. Key files take the same lines.
func TestNamedKeys(t *testing.T) {
	keys, names := namedKeys([]string{"ops=key-one-123456", "plain-key-0001", "c2VjcmV0a2V5MQ==", "a b=key-two-123456", "ci.bot@x=key-three-1234"})
	assert.Equal(t, []string{"key-one-123456", "plain-key-0001", "c2VjcmV0a2V5MQ==", "a b=key-two-123456", "key-three-1234"}, keys)
	assert.Equal(t, map[string]string{"key-one-123456": "ops", "key-three-1234": "ci.bot@x"}, names)

	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte("# team keys\nalice=alice-key-0001\nbare-key-00002\n"), 0o600))
	entries, err := apiKeys(nil, file)
	require.NoError(t, err)
	keys, names = namedKeys(entries)
	assert.Equal(t, []string{"alice-key-0001", "bare-key-00002"}, keys)
	assert.Equal(t, map[string]string{"alice-key-0001": "alice"}, names)
}
