//go:build !monty_lean

package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/protocol/server"
)

func TestProfilesFile(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		f := filepath.Join(dir, "p.json")
		require.NoError(t, os.WriteFile(f, []byte(text), 0o644))
		return f
	}
	specs, err := readProfiles(write(`{"small": {"max_memory": "64MiB", "max_duration": "5s", "max_recursion": 200, "mounts": ["` + dir + `:/data:ro"], "park_only": true}}`))
	require.NoError(t, err)
	profiles, closeAll, err := wsProfiles(context.Background(), specs, server.Profile{}, time.Second, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer closeAll()
	p := profiles["small"]
	assert.Equal(t, int64(64<<20), p.Limits.MaxMemory)
	assert.Equal(t, 5*time.Second, p.Limits.MaxDuration)
	assert.Equal(t, 200, p.Limits.MaxRecursion)
	assert.True(t, p.ParkOnly)
	assert.False(t, profiles[""].ParkOnly)
	require.Len(t, p.Mounts, 1)
	assert.Equal(t, "/data", p.Mounts[0].Guest)
	assert.Contains(t, profiles, "", "the server's own flags make the default profile")

	for name, text := range map[string]string{
		"not JSON":      `{`,
		"unknown field": `{"a": {"max_mem": "1MiB"}}`,
		"empty name":    `{"": {}}`,
	} {
		_, err := readProfiles(write(text))
		assert.Error(t, err, name)
	}
	for name, spec := range map[string]profileSpec{
		"bad size":          {MaxMemory: "lots"},
		"bad duration":      {MaxDuration: "soon"},
		"negative depth":    {MaxRecursion: -1},
		"missing directory": {Mounts: []string{filepath.Join(dir, "nope") + ":/x:ro"}},
		"bad connect":       {Connect: []string{"no-equals-sign"}},
	} {
		_, _, err := wsProfiles(context.Background(), map[string]profileSpec{"p": spec}, server.Profile{}, time.Second, slog.New(slog.DiscardHandler))
		assert.Error(t, err, name)
	}
	_, err = readProfiles(filepath.Join(dir, "missing.json"))
	assert.Error(t, err)
}

func TestWSFlags(t *testing.T) {
	w := &wsFlags{maxConns: 10, maxConnsPerKey: 2, idleTimeout: time.Minute, turnTimeout: time.Minute, frameTimeout: time.Second, maxFrame: "1MiB"}
	o, err := w.options()
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), o.MaxFrame)
	assert.Equal(t, time.Second, o.FrameTimeout)
	for _, bad := range []wsFlags{
		{maxConns: 0, maxConnsPerKey: 1, idleTimeout: time.Minute, turnTimeout: time.Minute, frameTimeout: time.Second, maxFrame: "1MiB"},
		{maxConns: 1, maxConnsPerKey: 1, idleTimeout: 0, turnTimeout: time.Minute, frameTimeout: time.Second, maxFrame: "1MiB"},
		{maxConns: 1, maxConnsPerKey: 1, idleTimeout: time.Minute, turnTimeout: time.Minute, frameTimeout: 0, maxFrame: "1MiB"},
		{maxConns: 1, maxConnsPerKey: 1, idleTimeout: time.Minute, turnTimeout: time.Minute, frameTimeout: time.Second, maxFrame: "10"},
	} {
		_, err := bad.options()
		assert.Error(t, err)
	}
}
