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

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	wsserver "github.com/monty-go/monty/session/protocol/server"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestConsoleInBrowser drives the console in a real Chromium (Debian's
// package, through Playwright for Python: scripts/browser.sh installs
// both, and scripts/test.sh exports where they are). The runs it decides
// are paused through POST /exec at an MCP tool that waits for approval;
// testdata/console/browser.py signs in, approves one and sees its result,
// approves the call a monty.v1 client's feed waits on and sees it handed
// to the feed (which then completes),
// denies another and sees the PermissionError, has a forged CSRF token
// refused, sees a script tag in a global stay text, and runs code in the
// run box.
func TestConsoleInBrowser(t *testing.T) {
	py, chromium := os.Getenv("MONTY_TEST_BROWSER_PYTHON"), os.Getenv("MONTY_TEST_CHROMIUM")
	if py == "" || chromium == "" {
		if testing.Short() {
			t.Skip("needs Chromium and Playwright: -short (make test-quick) leaves it out; the full test command runs it")
		}
		t.Fatal("MONTY_TEST_BROWSER_PYTHON or MONTY_TEST_CHROMIUM is not set: this test drives the console in Chromium with Playwright; run " +
			"`eval \"$(scripts/browser.sh env)\"` from the repository root (scripts/test.sh does this), then run the tests again")
	}
	m := newMCPTools()
	reg := m.approvalRegistry(t)
	st := memstore.New(memstore.Options{})
	keeper := newKeeper(t, st, session.ManagerOptions{})
	s := newServer(t, httpapi.Options{Keeper: keeper, APIKeys: consoleKeys, Functions: reg})
	c := s.client(consoleKeys[0])
	// A monty.v1 client's feed waits on the same kind of call, in a
	// session of the same key, served beside the API as monty serve does.
	v1 := newMontyV1(t, wsserver.Options{Store: st, Keeper: keeper, SigningKey: testKey, APIKeys: consoleKeys,
		Profiles: map[string]wsserver.Profile{"": {Host: reg.Host(), Tools: reg}}})
	v1Session, v1Done := v1.feedWaiting(t, 2*time.Minute, `await everything.echo(message="from monty.v1")`)
	for _, id := range []string{"approve-me", "deny-me", "forge-me"} {
		body, _ := json.Marshal(map[string]any{"session_id": id, "code": `await everything.echo(message="hello <b>console</b>")`})
		status, _, data := c.do("POST", "/exec", body)
		pausedAnswer(t, status, data)
	}
	c.run("hostile", `x = "<script>document.title = 'pwned'</script>"`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.Eventually(t, func() bool {
		_, _, data := c.do("GET", "/state/"+v1Session+"/info", nil)
		return bytes.Contains(data, []byte(`"paused"`))
	}, 20*time.Second, 10*time.Millisecond, "the monty.v1 feed's call waits for approval")
	cmd := exec.CommandContext(ctx, py, filepath.Join("..", "..", "testdata", "console", "browser.py"), s.srv.URL, consoleKeys[0], v1Session)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	assert.Equal(t, "ok\n", stdout.String())
	assert.Equal(t, object.Str("echo: from monty.v1"), v1.value(t, <-v1Done), "approved in the console, the monty.v1 client's feed completes")
	assert.Equal(t, int32(2), m.echoes.Load(), "each approved call was made once; the denied and the forged were not")
	// The forged decision left its run paused, for a person to decide.
	status, _, data := c.do("POST", "/exec", []byte(`{"session_id": "forge-me", "code": "1"}`))
	require.Equal(t, 409, status, string(data))
	assert.Contains(t, string(data), "run_paused")
}
