//go:build unix

package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/protocol"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// TestWorkerKilledDuringFirstCompile is what a pool with a short request
// deadline does to workers on a machine whose cache is cold: it kills each
// one that does not answer in time. A worker answers its first feed
// without waiting for the machine code (it starts on wazero's interpreter
// engine), and the compilation it started goes on after it is killed: the
// cache fills, for the interpreter and the type checker, and the next
// worker finds it warm.
func TestWorkerKilledDuringFirstCompile(t *testing.T) {
	cache := t.TempDir()
	env := append(os.Environ(), "MONTY_CACHE_DIR="+cache)

	cmd := exec.Command(binary, "subprocess")
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	conn := protocol.NewStreamConn(stdout, stdin, 0)
	ctx := context.Background()
	require.NoError(t, protocol.Send(ctx, conn, &pb.ParentRequest{Kind: &pb.ParentRequest_Configure{Configure: &pb.Configure{ProtocolVersion: protocol.Version, ScriptName: "main.py"}}}))
	ev, err := protocol.ReadEvent(ctx, conn)
	require.NoError(t, err)
	require.NotNil(t, ev.GetOk(), "configure: %v", ev)
	require.NoError(t, protocol.Send(ctx, conn, &pb.ParentRequest{Kind: &pb.ParentRequest_Feed{Feed: &pb.Feed{Code: "20 + 22", Values: &pb.Arena{}}}}))
	ev, err = protocol.ReadEvent(ctx, conn)
	require.NoError(t, err)
	require.NotNil(t, ev.GetComplete(), "feed: %v", ev)
	ready, _ := filepath.Glob(filepath.Join(cache, "module-*", "ready"))
	require.Empty(t, ready, "the worker answered only once the machine code was cached: a deadline shorter than the compilation kills every worker")

	// Killed as a pool kills a late worker.
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	// The compilation outlives it: both entries become ready. Their locks
	// are then free once the compiling process is done with them.
	deadline := time.Now().Add(5 * time.Minute)
	for len(ready) < 2 {
		require.True(t, time.Now().Before(deadline), "the cache did not fill after the worker was killed (ready: %v)", ready)
		time.Sleep(200 * time.Millisecond)
		ready, _ = filepath.Glob(filepath.Join(cache, "module-*", "ready"))
	}
	for _, r := range ready {
		f, err := os.OpenFile(filepath.Join(filepath.Dir(r), "compiling.lock"), os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
		f.Close()
	}

	code, out, stderr := runBinary(t, binary, nil, "precompile", "--cache-dir", cache)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "is already compiled in")
	require.Contains(t, out, "the type checker is already compiled in")
}
