package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// browser is a console client: a cookie jar, redirects not followed, so
// that every answer can be checked.
type browser struct {
	t    *testing.T
	s    *server
	http *http.Client
}

func (s *server) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := s.srv.Client()
	return &browser{t: t, s: s, http: &http.Client{Transport: c.Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request; header is name, value pairs.
func (b *browser) do(method, path, contentType string, body io.Reader, header ...string) (*http.Response, string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.s.srv.URL+path, body)
	require.NoError(b.t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.http.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp, string(data)
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	return b.do("GET", path, "", nil)
}

// post submits a form.
func (b *browser) post(path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	return b.do("POST", path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), header...)
}

// signIn signs in with key and fails unless it is accepted.
func (b *browser) signIn(key string) {
	b.t.Helper()
	resp, body := b.post("/ui/signin", url.Values{"key": {key}})
	require.Equal(b.t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(b.t, "/ui/", resp.Header.Get("Location"))
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// csrf is the CSRF token of the signed-in pages.
func (b *browser) csrf() string {
	b.t.Helper()
	resp, body := b.get("/ui/")
	require.Equal(b.t, http.StatusOK, resp.StatusCode, body)
	m := csrfMeta.FindStringSubmatch(body)
	require.NotNil(b.t, m, body)
	return m[1]
}

// consoleKeys are the API keys of the console tests.
var consoleKeys = []string{"console-key-a-123", "console-key-b-456"}

// TestConsoleSignIn: a request without a sign-in is sent to the sign-in
// page; a wrong key is refused; the right one gets a cookie that holds no
// key (HttpOnly, SameSite=Strict, Path=/ui, an expiry) and pages sent
// with the security headers; a tampered cookie is no sign-in; signing out
// needs the CSRF token and makes the cookie useless, even replayed.
func TestConsoleSignIn(t *testing.T) {
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys})
	b := s.browser(t)
	for _, path := range []string{"/ui/", "/ui/approvals", "/ui/health", "/ui/s/any", "/ui/s/any/files/a.txt"} {
		resp, _ := b.get(path)
		assert.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		assert.Equal(t, "/ui/signin", resp.Header.Get("Location"), path)
	}
	resp, _ := b.get("/ui")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/ui/", resp.Header.Get("Location"))
	resp, body := b.get("/ui/signin")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `<input type="password" name="key"`)

	resp, body = b.post("/ui/signin", url.Values{"key": {"not-a-key"}})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, "that API key is not accepted by this server")
	assert.Empty(t, resp.Cookies())
	resp, _ = b.post("/ui/signin", url.Values{"key": {consoleKeys[0]}}, "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a sign-in posted from another site")
	assert.Empty(t, resp.Cookies())

	resp, _ = b.post("/ui/signin", url.Values{"key": {consoleKeys[0]}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	ck := resp.Cookies()[0]
	assert.True(t, ck.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	assert.False(t, ck.Secure, "plain HTTP: not Secure")
	assert.Equal(t, "/ui", ck.Path)
	assert.WithinDuration(t, time.Now().Add(8*time.Hour), ck.Expires, time.Minute)
	assert.NotContains(t, ck.Value, consoleKeys[0])
	raw := ck.Value
	setCookie := resp.Header.Get("Set-Cookie")
	assert.NotContains(t, setCookie, consoleKeys[0])

	resp, body = b.get("/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self';")
	assert.NotContains(t, resp.Header.Get("Content-Security-Policy"), "unsafe-inline")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.NotContains(t, body, "<script>", "no inline script")
	assert.NotContains(t, body, consoleKeys[0])

	// A tampered cookie is no sign-in.
	forged := s.browser(t)
	u, _ := url.Parse(s.srv.URL + "/ui/")
	payload, mac, _ := strings.Cut(raw, ".")
	forged.http.Jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: payload + "x." + mac, Path: "/ui"}})
	resp, _ = forged.get("/ui/")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "a cookie whose MAC does not verify")

	// Signing out needs the token; afterwards the cookie is refused, even
	// sent again by hand.
	token := b.csrf()
	resp, body = b.post("/ui/signout", url.Values{"csrf": {"forged"}})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	resp, _ = b.post("/ui/signout", url.Values{})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "no token")
	resp, _ = b.get("/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode, "refused sign-outs left the sign-in alone")
	resp, _ = b.post("/ui/signout", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/ui/signin", resp.Header.Get("Location"))
	replay := s.browser(t)
	replay.http.Jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: raw, Path: "/ui"}})
	resp, _ = replay.get("/ui/")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "a signed-out cookie is refused")

	// Another instance with the same signing key accepts a sign-in of a
	// key it has; one whose keys no longer include it does not.
	b.signIn(consoleKeys[1])
	other := newServer(t, httpapi.Options{APIKeys: consoleKeys[1:]})
	moved := other.browser(t)
	ou, _ := url.Parse(other.srv.URL + "/ui/")
	moved.http.Jar.SetCookies(ou, b.http.Jar.Cookies(u))
	resp, _ = moved.get("/ui/")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "instances sharing the signing key share sign-ins")
	removed := newServer(t, httpapi.Options{APIKeys: consoleKeys[:1]})
	gone := removed.browser(t)
	ru, _ := url.Parse(removed.srv.URL + "/ui/")
	gone.http.Jar.SetCookies(ru, b.http.Jar.Cookies(u))
	resp, _ = gone.get("/ui/")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "the sign-in of a key the server no longer has")
}

// TestConsoleSecureCookie: over TLS the cookie is Secure.
func TestConsoleSecureCookie(t *testing.T) {
	h, err := httpapi.New(httpapi.Options{
		Keeper:  newKeeper(t, nil, session.ManagerOptions{}),
		Session: session.Options{Store: memstore.New(memstore.Options{}), SigningKey: testKey},
		APIKeys: consoleKeys,
		Logger:  slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	s := &server{t: t, h: h, srv: srv}
	resp, _ := s.browser(t).post("/ui/signin", url.Values{"key": {consoleKeys[0]}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	assert.True(t, resp.Cookies()[0].Secure)
}

// TestConsoleOff: with DisableConsole every /ui path is the API's 404.
func TestConsoleOff(t *testing.T) {
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys, DisableConsole: true})
	b := s.browser(t)
	for _, path := range []string{"/ui", "/ui/", "/ui/signin", "/ui/static/console.js", "/ui/approvals"} {
		resp, body := b.get(path)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		assert.Contains(t, body, `"error":"not_found"`, path)
	}
	resp, _ := b.post("/ui/signin", url.Values{"key": {consoleKeys[0]}})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Empty(t, resp.Cookies())
}

// TestConsoleOpen: with no API keys the console is open as the API is,
// says so, and still needs the CSRF token of its cookie to change
// anything.
func TestConsoleOpen(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	s.client("").run("opened", "x = 1")
	b := s.browser(t)
	resp, body := b.get("/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "No API keys are configured: this console is open")
	assert.Contains(t, body, `href="/ui/s/opened"`)
	assert.NotContains(t, body, `id="signout"`)
	resp, _ = b.get("/ui/signin")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "nothing to sign in to")
	resp, _ = b.do("POST", "/ui/s/opened/exec", "application/json", strings.NewReader(`{"code":"x = 2"}`))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	resp, _ = b.do("POST", "/ui/s/opened/exec", "application/json", strings.NewReader(`{"code":"x = 2"}`), "X-CSRF-Token", b.csrf(), "Origin", "http://evil.example")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "another site's request")
	resp, body = b.do("POST", "/ui/s/opened/exec", "application/json", strings.NewReader(`{"code":"x = 2\nx"}`), "X-CSRF-Token", b.csrf())
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"result":2`)
}

// TestConsoleSessions: the list shows the key's sessions (id, size, last
// use, tier), newest first, searchable by id and paged by 50.
func TestConsoleSessions(t *testing.T) {
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys})
	a := s.client(consoleKeys[0])
	for i := range 55 {
		a.run(fmt.Sprintf("s-%02d", i), "x = 1")
	}
	s.client(consoleKeys[1]).run("theirs", "secret = 42")
	b := s.browser(t)
	b.signIn(consoleKeys[0])
	_, body := b.get("/ui/")
	assert.Contains(t, body, "55 sessions; page 1 of 2.")
	assert.Contains(t, body, `href="/ui/s/s-54"`, "newest first")
	assert.NotContains(t, body, `href="/ui/s/s-04"`)
	assert.Contains(t, body, "<td>memory</td>", "the tier (here the store's kind)")
	assert.NotContains(t, body, "theirs")
	assert.Contains(t, body, `href="/ui/?page=2" id="next"`)
	_, body = b.get("/ui/?page=2")
	assert.Contains(t, body, `href="/ui/s/s-00"`)
	assert.Contains(t, body, `id="prev"`)
	_, body = b.get("/ui/?q=s-1")
	assert.Contains(t, body, `10 sessions matching &#34;s-1&#34;; page 1 of 1.`)
	_, body = b.get("/ui/?q=theirs")
	assert.Contains(t, body, "0 sessions")
	_, body = b.get("/ui/?q=" + url.QueryEscape(`"><script>x</script>`))
	assert.NotContains(t, body, "<script>x</script>", "the query is escaped")
	assert.Contains(t, body, `&lt;script&gt;x&lt;/script&gt;`)
}

// hostileCode leaves a session with hostile values: a global holding a
// script tag, a file whose name has quotes and angle brackets.
const hostileCode = `x = "<script>document.title='pwned'</script>"
y = {"k<b>": "</pre><img src=x onerror=alert(1)>"}
with open("/work/a\"b'<i>.txt", "w") as f:
    f.write("<html>not for the browser</html>")
`

// TestConsoleSession: a session's page shows its JSON globals and files
// as text, never as HTML; its files download as attachments; another
// key's session, file and unknown ids are 404.
func TestConsoleSession(t *testing.T) {
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys})
	s.client(consoleKeys[0]).run("hostile", hostileCode)
	b := s.browser(t)
	b.signIn(consoleKeys[0])
	resp, body := b.get("/ui/s/hostile")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	for _, raw := range []string{"<script>document", "<img src=x", "<i>.txt", `a"b'`, "</pre><img"} {
		assert.NotContains(t, body, raw)
	}
	assert.Contains(t, body, `&#34;x&#34;: &#34;&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;&#34;`)
	assert.Contains(t, body, `a&#34;b&#39;&lt;i&gt;.txt`, "the file name, escaped as text")
	assert.Contains(t, body, `href="/ui/s/hostile/files/a%22b%27%3Ci%3E.txt"`, "the link, escaped as a URL")
	assert.Contains(t, body, `id="no-run"`)
	assert.Contains(t, body, `id="decisions"`, "the place for the decisions")

	resp, data := b.get("/ui/s/hostile/files/" + url.PathEscape(`a"b'<i>.txt`))
	require.Equal(t, http.StatusOK, resp.StatusCode, data)
	assert.Equal(t, "<html>not for the browser</html>", data)
	assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	assert.Contains(t, resp.Header.Get("Content-Disposition"), "attachment")
	resp, _ = b.get("/ui/s/hostile/files/missing.txt")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	other := s.browser(t)
	other.signIn(consoleKeys[1])
	for _, path := range []string{"/ui/s/hostile", "/ui/s/hostile/files/" + url.PathEscape(`a"b'<i>.txt`), "/ui/s/nothing", "/ui/s/bad%20id"} {
		resp, body := other.get(path)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		assert.NotContains(t, body, "not for the browser", path)
	}
}

var decideForm = regexp.MustCompile(`<form method="post" action="(/ui/runs/[^"]+/decide)" class="inline">\s*<input type="hidden" name="csrf" value="([^"]+)">\s*<input type="hidden" name="call" value="([^"]+)">`)

// TestConsoleApprovals: the approvals page lists every approval call
// waiting across the key's sessions, with the tool as the code calls it
// and its arguments as text; Approve makes the call (through the resume's
// path) and shows the run's result, Deny raises PermissionError in the
// code. A forged, missing or cross-site form is refused with 403 and
// calls nothing; another key sees none of them and cannot decide them.
func TestConsoleApprovals(t *testing.T) {
	m := newMCPTools()
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys, Functions: m.approvalRegistry(t)})
	a := s.client(consoleKeys[0])
	code := `try:
    r = await everything.echo(message="<img src=x onerror=alert(1)>")
except PermissionError as e:
    raise ValueError("<b>denied</b>: " + str(e))
r`
	for _, id := range []string{"one", "two"} {
		body, _ := json.Marshal(map[string]any{"code": code, "session_id": id})
		status, _, data := a.do("POST", "/exec", body)
		pausedAnswer(t, status, data)
	}
	a.run("idle", "z = 1")

	b := s.browser(t)
	b.signIn(consoleKeys[0])
	resp, body := b.get("/ui/approvals")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "2 calls waiting")
	assert.Equal(t, 2, strings.Count(body, `<code class="tool">everything.echo</code>`))
	assert.NotContains(t, body, "<img src=x")
	assert.Contains(t, body, `{&#34;args&#34;:[],&#34;kwargs&#34;:{&#34;message&#34;:&#34;&lt;img src=x onerror=alert(1)&gt;&#34;}}`)
	forms := decideForm.FindAllStringSubmatch(body, -1)
	require.Len(t, forms, 2, body)
	action, token, call := forms[0][1], forms[0][2], forms[0][3]

	// The session page has the paused run and its buttons too.
	_, page := b.get("/ui/s/one")
	assert.Contains(t, page, `<code class="tool">everything.echo</code>`)
	assert.Len(t, decideForm.FindAllStringSubmatch(page, -1), 1)

	// Refusals call nothing.
	for _, bad := range []struct {
		what   string
		form   url.Values
		header []string
	}{
		{"a forged token", url.Values{"csrf": {"AAAA" + token[4:]}, "call": {call}, "decision": {"approve"}}, nil},
		{"no token", url.Values{"call": {call}, "decision": {"approve"}}, nil},
		{"another site", url.Values{"csrf": {token}, "call": {call}, "decision": {"approve"}}, []string{"Origin", "https://evil.example"}},
		{"a cross-site fetch", url.Values{"csrf": {token}, "call": {call}, "decision": {"approve"}}, []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		resp, body := b.post(action, bad.form, bad.header...)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, bad.what+": "+body)
	}
	resp, body = b.post(action, url.Values{"csrf": {token}, "call": {call}, "decision": {"maybe"}})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	other := s.browser(t)
	other.signIn(consoleKeys[1])
	_, body = other.get("/ui/approvals")
	assert.Contains(t, body, "No approvals are waiting.")
	resp, body = other.post(action, url.Values{"csrf": {other.csrf()}, "call": {call}, "decision": {"approve"}})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "another key's run: "+body)
	assert.Contains(t, body, "run_not_found")
	assert.Equal(t, int32(0), m.echoes.Load(), "no refused decision made the call")

	// Approve: the server makes the call; the page shows the result.
	resp, body = b.post(action, url.Values{"csrf": {token}, "call": {call}, "decision": {"approve"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, int32(1), m.echoes.Load())
	assert.Contains(t, body, `<p id="status">The run completed.</p>`)
	assert.Contains(t, body, `approved in session <a href="/ui/s/two">two</a>`, "the most recently paused first")
	assert.Contains(t, body, `&#39;echo: &lt;img src=x onerror=alert(1)&gt;&#39;`)
	assert.NotContains(t, body, "<img src=x")
	resp, body = b.post(action, url.Values{"csrf": {token}, "call": {call}, "decision": {"approve"}})
	assert.Equal(t, http.StatusConflict, resp.StatusCode, "a run is resumed once")
	assert.Contains(t, body, "run_not_paused")
	assert.Equal(t, int32(1), m.echoes.Load())

	// Deny: PermissionError in the code (here re-raised with HTML in it).
	resp, body = b.post(forms[1][1], url.Values{"csrf": {token}, "call": {forms[1][3]}, "decision": {"deny"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "ValueError: &lt;b&gt;denied&lt;/b&gt;: everything.echo was not approved")
	assert.NotContains(t, body, "<b>denied")
	assert.Equal(t, int32(1), m.echoes.Load(), "a denied call is not made")
	_, body = b.get("/ui/approvals")
	assert.Contains(t, body, "No approvals are waiting.")
}

// TestConsoleRunBox: the run box's endpoint runs code as POST /exec does,
// in the path's session (whatever the body says), streaming events; it
// needs the CSRF token, and another key's session is a new one of its own.
func TestConsoleRunBox(t *testing.T) {
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys})
	s.client(consoleKeys[1]).run("shared-name", "secret = 42")
	b := s.browser(t)
	b.signIn(consoleKeys[0])
	token := b.csrf()
	run := func(path, body string, header ...string) (*http.Response, string) {
		return b.do("POST", path, "application/json", strings.NewReader(body), append([]string{"Accept", "text/event-stream"}, header...)...)
	}
	resp, _ := run("/ui/s/mine/exec", `{"code":"x = 1"}`)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "no token")
	resp, _ = run("/ui/s/mine/exec", `{"code":"x = 1"}`, "X-CSRF-Token", "bogus")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a forged token")
	resp, _ = run("/ui/s/mine/exec", `not json`, "X-CSRF-Token", token)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	resp, body := run("/ui/s/mine/exec", `{"code":"print('a')\nprint('b')\nx = 40\nx + 2", "session_id": "elsewhere"}`, "X-CSRF-Token", token)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := sseEvents(t, body)
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	require.Equal(t, "RUN_FINISHED", last["type"], body)
	result := last["result"].(map[string]any)
	assert.Equal(t, "mine", result["session_id"], "the path's session")
	assert.Equal(t, "a\nb\n", result["stdout"])
	assert.InDelta(t, 42, result["result"], 0)
	var printed string
	for _, e := range events {
		if e["type"] == "TEXT_MESSAGE_CONTENT" {
			printed += e["delta"].(string)
		}
	}
	assert.Equal(t, "a\nb\n", printed, "the output streams as it is printed")

	_, body = run("/ui/s/shared-name/exec", `{"code":"secret"}`, "X-CSRF-Token", token)
	assert.Contains(t, body, "NameError", "another key's session of the same name is not this key's")
	_, body = run("/ui/exec", `{"code":"1 + 1"}`, "X-CSRF-Token", token)
	events = sseEvents(t, body)
	result = events[len(events)-1]["result"].(map[string]any)
	assert.NotEmpty(t, result["session_id"], "a new session")
}

// sseEvents decodes the data frames of an event stream.
func sseEvents(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &e), data)
			out = append(out, e)
		}
	}
	return out
}

// TestConsoleHealth: the health page shows the server's liveness and runs
// the store's check; the static files are served with their types; an
// unknown console path is a 404 page.
func TestConsoleHealth(t *testing.T) {
	s := newServer(t, httpapi.Options{APIKeys: consoleKeys})
	b := s.browser(t)
	b.signIn(consoleKeys[0])
	resp, body := b.get("/ui/health")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `<strong id="server-status">ok</strong>`)
	assert.Contains(t, body, `Store (memstore): <strong id="store-status">ok</strong>`)
	for _, check := range []string{"write", "read", "delete"} {
		assert.Contains(t, body, "<td>"+check+"</td><td>ok</td>")
	}
	resp, body = b.get("/ui/static/console.js")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, body, "textContent")
	resp, _ = b.get("/ui/static/console.css")
	assert.Equal(t, "text/css; charset=utf-8", resp.Header.Get("Content-Type"))
	resp, _ = b.get("/ui/static/nothing.js")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, body = b.get("/ui/nowhere")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, "is not a page of the console")
}

// TestConsoleStoreFailure: a store that fails shows the API's own words
// on the console (503 for a session's page, "could not be read" on the
// approvals page), never its host paths or the key's namespace; the log
// has the store's wording.
func TestConsoleStoreFailure(t *testing.T) {
	inner := memstore.New(memstore.Options{})
	_, err := inner.Put(context.Background(), namespace(consoleKeys[0])+"/s", []byte("x"), store.Cond{})
	require.NoError(t, err)
	var logs logBuffer
	s := newServer(t, httpapi.Options{Session: session.Options{Store: failingStore{Store: inner, kind: store.ErrUnavailable}}, APIKeys: consoleKeys, Logger: logs.logger()})
	b := s.browser(t)
	b.signIn(consoleKeys[0])
	resp, body := b.get("/ui/")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `href="/ui/s/s"`)
	resp, body = b.get("/ui/s/s")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, body, "the session store cannot be reached")
	_, approvals := b.get("/ui/approvals")
	assert.Contains(t, approvals, "The state of session &#34;s&#34; could not be read.")
	for _, hidden := range []string{hostPath, namespace(consoleKeys[0])} {
		assert.NotContains(t, body, hidden)
		assert.NotContains(t, approvals, hidden)
	}
	assert.Contains(t, logs.String(), hostPath, "the log has the store's own error")
}
