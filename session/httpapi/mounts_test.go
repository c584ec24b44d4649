package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session/httpapi"
)

// TestMountsPerRequest: the operator's mounts are opened for each request:
// an overlay's writes stay with the request that made them, clients never
// name a host path, and a mount that no longer opens fails the request
// without showing the host path.
func TestMountsPerRequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.txt"), []byte("host"), 0o644))
	spec, err := vfs.ParseMount(dir + ":/data:overlay")
	require.NoError(t, err)
	s := newServer(t, httpapi.Options{Mounts: []vfs.MountSpec{spec}})
	c := s.client("")

	res := c.run("", "open('/data/in.txt', 'w').write('mine')\nopen('/data/in.txt').read()")
	assert.Equal(t, json.RawMessage(`"mine"`), res.Result)
	res = c.run(res.SessionID, "open('/data/in.txt').read()")
	assert.Equal(t, json.RawMessage(`"host"`), res.Result, "the next request starts from the host directory")
	_, resp, _ := c.exec(map[string]any{"code": "open('" + filepath.Join(dir, "in.txt") + "').read()"})
	require.NotNil(t, resp.Error)
	assert.Equal(t, "PermissionError", resp.Error.Type, "a host path is no path in the sandbox")

	require.NoError(t, os.RemoveAll(dir))
	status, _, body := c.do("POST", "/exec", []byte(`{"code": "1"}`))
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Contains(t, string(body), "mounts cannot be opened")
	assert.False(t, strings.Contains(string(body), dir), "the body names no host path: %s", body)
}
