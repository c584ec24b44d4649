package main_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/clienttest"
)

// leftOutOfLean are packages the lean build (the monty_lean tag, which
// the wheel carries) must not link: the servers and the clients of
// networks, whose initializers every process would run.
var leftOutOfLean = []string{
	"github.com/monty-go/monty/session/httpapi",
	"github.com/monty-go/monty/session/mcpserver",
	"github.com/monty-go/monty/session/mcpclient",
	"github.com/monty-go/monty/session/protocol/server",
	"github.com/monty-go/monty/session/store/redisstore",
	"github.com/monty-go/monty/session/store/s3store",
	"github.com/modelcontextprotocol/go-sdk/mcp",
	"github.com/redis/go-redis/v9",
	"github.com/minio/minio-go/v7",
	"github.com/prometheus/client_golang/prometheus",
	"google.golang.org/grpc",
	"go.opentelemetry.io/otel/sdk/trace",
}

// TestLeanBuild: the CLI built with -tags monty_lean runs code, keeps a
// session in a directory and serves pydantic-monty as its worker, links
// none of leftOutOfLean, and refuses what it leaves out (monty serve,
// monty mcp, --connect, a Redis or S3 store) with a usage error that
// says where to find it.
func TestLeanBuild(t *testing.T) {
	deps, err := exec.Command("go", "list", "-deps", "-tags", "monty_lean", ".").Output()
	require.NoError(t, err)
	linked := map[string]bool{}
	for _, p := range strings.Fields(string(deps)) {
		linked[p] = true
	}
	require.True(t, linked["github.com/monty-go/monty/session/protocol"], "go list gave no dependencies: %s", deps)
	for _, p := range leftOutOfLean {
		assert.False(t, linked[p], "the lean build links %s", p)
	}

	lean := filepath.Join(t.TempDir(), "monty")
	out, err := exec.Command("go", "build", "-tags", "monty_lean", "-o", lean, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)

	code, stdout, stderr := runBinary(t, lean, nil, "version")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "\nbuild: lean\n")
	_, stdout, _ = run(t, "version")
	assert.Contains(t, stdout, "\nbuild: full\n")

	store := t.TempDir()
	for _, src := range []string{"n = 20", "print(n + 1)"} {
		code, stdout, stderr = runBinary(t, lean, nil, "--session", "s", "--store", store, "-c", src)
		require.Equal(t, 0, code, stderr)
	}
	assert.Equal(t, "21\n", stdout, "the session kept n in the directory store")

	for _, args := range [][]string{
		{"serve"},
		{"mcp"},
		{"--connect", "clock=/bin/true", "-c", "1"},
		{"--session", "s", "--store", "redis://127.0.0.1:1/0", "-c", "1"},
		{"--session", "s", "--store", "s3://k:s@127.0.0.1:1/bucket", "-c", "1"},
	} {
		code, _, stderr = runBinary(t, lean, nil, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "not in this build", args)
		assert.Contains(t, stderr, "release archive", args)
	}

	// pydantic-monty 1.4.0 drives it as upstream's worker, with the same
	// results, type checks included.
	t.Log(clienttest.Run(t, 2*time.Minute, nil, "monty_v1.py", clienttest.UpstreamMonty(t), lean, "--only", "basic", "type_checking", "os_calls_handler"))
}
