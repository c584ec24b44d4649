package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSplitCommand splits command lines into words, and holds each result
// to what /bin/sh makes of the same line (printf prints the words it
// gets, NUL-terminated).
func TestSplitCommand(t *testing.T) {
	sh, shErr := exec.LookPath("sh")
	empty := t.TempDir()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"node server.js stdio", []string{"node", "server.js", "stdio"}},
		{"  a\t b  ", []string{"a", "b"}},
		{`uvx mcp-server-time --local-timezone 'America/New York'`, []string{"uvx", "mcp-server-time", "--local-timezone", "America/New York"}},
		{`sh -c 'echo $$ > pid; exec "$@"' sh node`, []string{"sh", "-c", `echo $$ > pid; exec "$@"`, "sh", "node"}},
		{`a"b c"'d e'f`, []string{"ab cd ef"}},
		{`'' "" x`, []string{"", "", "x"}},
		{`a\ b \'c\' \"d\" \\e \$f`, []string{"a b", "'c'", `"d"`, `\e`, "$f"}},
		{`"\$ \` + "`" + ` \" \\ \n \a"`, []string{"$ ` \" \\ \\n \\a"}},
		{`'\n \ "' "'"`, []string{`\n \ "`, "'"}},
		{"a\\\nb \"c\\\nd\" 'e\nf'", []string{"ab", "cd", "e\nf"}},
		{`x=y a~b a#b * ? [x] {a,b} 'x|y' "a;b" \& \(`, []string{"x=y", "a~b", "a#b", "*", "?", "[x]", "{a,b}", "x|y", "a;b", "&", "("}},
		{"héllo 'wörld €'", []string{"héllo", "wörld €"}},
	} {
		got, err := splitCommand(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
		if shErr != nil || strings.Contains(c.in, "a\nb") {
			continue
		}
		cmd := exec.Command(sh, "-c", `printf '%s\0' `+c.in)
		cmd.Dir = empty // where * matches nothing
		out, err := cmd.Output()
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), "sh splits %q differently", c.in)
	}
}

// TestSplitCommandRefuses: what a shell would not pass on as it is is an
// error that says what to write instead.
func TestSplitCommandRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`node 'server.js`, `the ' at byte 6 is never closed`},
		{`node "a b`, `the " at byte 6 is never closed`},
		{`node "a\"`, `the " at byte 6 is never closed`},
		{`node a\`, `ends with a backslash`},
		{``, `there is no command`},
		{" \t\n", `there is no command`},
		{`''`, ``}, // an empty word is a word (the command fails to start later)
		{`docker run -e TOKEN=$TOKEN img`, `$ would be replaced by a variable`},
		{`echo "$HOME"`, `write the value itself`},
		{"echo `id`", "` would be replaced by a command's output"},
		{`server | tee log`, `| is a shell operator`},
		{`server > log`, `> is a shell operator`},
		{`a; b`, `; is a shell operator`},
		{`a & b`, `& is a shell operator`},
		{`npx server ~/docs`, `~ is not expanded`},
		{`server # comment`, `# would start a comment`},
	} {
		_, err := splitCommand(c.in)
		if c.want == "" {
			assert.NoError(t, err, c.in)
			continue
		}
		if assert.Error(t, err, c.in) {
			assert.Contains(t, err.Error(), c.want, c.in)
		}
	}
}
