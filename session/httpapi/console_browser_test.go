package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/httpapi"
)

// TestConsoleInBrowser drives the console in a real Chromium (Debian's
// package, through Playwright for Python: scripts/browser.sh installs
// both, and scripts/test.sh exports where they are). The runs it decides
// are paused through POST /exec at an MCP tool that waits for approval;
// testdata/console/browser.py signs in, approves one and sees its result,
// denies another and sees the PermissionError, has a forged CSRF token
// refused, sees a script tag in a global stay text, and runs code in the
// run box.
func TestConsoleInBrowser(t *testing.T) {
	py, chromium := os.Getenv("MONTY_TEST_BROWSER_PYTHON"), os.Getenv("MONTY_TEST_CHROMIUM")
	if py == "" || chromium == "" {
		t.Fatal("MONTY_TEST_BROWSER_PYTHON or MONTY_TEST_CHROMIUM is not set: this test drives the console in Chromium with Playwright; run " +
			"`eval \"$(scripts/browser.sh env)\"` from the repository root (scripts/test.sh does this), then run the tests again")
	}
	m := newMCPTools()
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys, Functions: m.approvalRegistry(t)})
	c := s.client(consoleKeys[0])
	for _, id := range []string{"approve-me", "deny-me", "forge-me"} {
		body, _ := json.Marshal(map[string]any{"session_id": id, "code": `await everything.echo(message="hello <b>console</b>")`})
		status, _, data := c.do("POST", "/exec", body)
		pausedAnswer(t, status, data)
	}
	c.run("hostile", `x = "<script>document.title = 'pwned'</script>"`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("..", "..", "testdata", "console", "browser.py"), s.srv.URL, consoleKeys[0])
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	assert.Equal(t, "ok\n", stdout.String())
	assert.Equal(t, int32(1), m.echoes.Load(), "the approved call was made once; the denied and the forged were not")
	// The forged decision left its run paused, for a person to decide.
	status, _, data := c.do("POST", "/exec", []byte(`{"session_id": "forge-me", "code": "1"}`))
	require.Equal(t, 409, status, string(data))
	assert.Contains(t, string(data), "run_paused")
}
