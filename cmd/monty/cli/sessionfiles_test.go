package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/cmd/monty/cli"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/dirstore"
)

// TestSessionFilesAndCat: `monty session files ID` lists what a session's
// code wrote under /work and `monty session cat ID PATH` writes a file's
// bytes to stdout unchanged; an unknown session or file exits 1 with a
// message, bad usage or a path outside /work exits 2.
func TestSessionFilesAndCat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := dirstore.Open(dir, dirstore.Options{})
	require.NoError(t, err)
	s, err := session.Open(ctx, "work", session.Options{Store: st, Files: &session.Files{}})
	require.NoError(t, err)
	res, err := s.Exec(ctx, "import os\nos.makedirs('out')\nopen('out/report.csv', 'w').write('a,b\\n1,2\\n')\nopen('raw.bin', 'wb').write(b'\\x00\\xff\\n\\x80')")
	require.NoError(t, err)
	require.Nil(t, res.Err)
	require.NoError(t, s.Close(ctx))
	_, err = session.Open(ctx, "empty", session.Options{Store: st})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	code, out, errOut := monty(t, "session", "--store", dir, "files", "work")
	require.Equal(t, cli.ExitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Equal(t, []string{"PATH", "SIZE", "MODIFIED"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"out/report.csv", "8"}, strings.Fields(lines[1])[:2])
	assert.Equal(t, []string{"raw.bin", "4"}, strings.Fields(lines[2])[:2])

	code, out, errOut = monty(t, "session", "--store", dir, "cat", "work", "out/report.csv")
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, "a,b\n1,2\n", out)
	code, out, _ = monty(t, "session", "--store", dir, "cat", "work", "/work/raw.bin")
	require.Equal(t, cli.ExitOK, code)
	assert.Equal(t, "\x00\xff\n\x80", out)

	code, out, errOut = monty(t, "session", "--store", dir, "cat", "work", "nope.txt")
	assert.Equal(t, cli.ExitException, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `has no file "nope.txt"`)
	assert.Contains(t, errOut, "monty session files work lists them")
	code, _, errOut = monty(t, "session", "--store", dir, "files", "nobody")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "no state is stored")
	code, _, errOut = monty(t, "session", "--store", dir, "cat", "nobody", "x")
	assert.Equal(t, cli.ExitException, code)
	assert.Contains(t, errOut, "no state is stored")

	code, out, _ = monty(t, "session", "--store", dir, "files", "empty")
	assert.Equal(t, cli.ExitException, code, "a session that never stored state has none")
	assert.Empty(t, out)

	code, _, errOut = monty(t, "session", "--store", dir, "cat", "work")
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errOut, "cat ID PATH")
	code, _, _ = monty(t, "session", "--store", dir, "files")
	assert.Equal(t, cli.ExitUsage, code)
	for _, bad := range []string{"../secret", "/etc/passwd", "a/../../b"} {
		code, _, errOut = monty(t, "session", "--store", dir, "cat", "work", bad)
		assert.Equal(t, cli.ExitUsage, code, bad)
		assert.Contains(t, errOut, "invalid argument", bad)
	}
}
