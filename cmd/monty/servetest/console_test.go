package servetest

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleFlag: `monty serve` serves the operator console at /ui by
// default (signing in with an API key sets its cookie), and
// --console=off removes it: every /ui path is the API's 404.
func TestConsoleFlag(t *testing.T) {
	const key = "console-flag-key"
	on := serve(t, "--store", "mem:", "--api-key", key)
	status, _, body, err := on.do("GET", "/ui/signin", nil)
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), `name="key"`) {
		t.Fatalf("GET /ui/signin: %d %v\n%s", status, err, body)
	}
	form := url.Values{"key": {key}}.Encode()
	on.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	status, header, _, err := on.do("POST", "/ui/signin", []byte(form), "Content-Type", "application/x-www-form-urlencoded")
	if err != nil || status != http.StatusSeeOther || !strings.Contains(header.Get("Set-Cookie"), "HttpOnly") {
		t.Fatalf("POST /ui/signin: %d %v %v", status, err, header)
	}
	if !strings.Contains(on.log(), `"msg":"operator console"`) {
		t.Errorf("the log does not give the console's URL:\n%s", on.log())
	}

	off := serve(t, "--store", "mem:", "--api-key", key, "--console=off")
	for _, path := range []string{"/ui", "/ui/", "/ui/signin", "/ui/static/console.js"} {
		status, _, body, err := off.do("GET", path, nil)
		if err != nil || status != http.StatusNotFound || !strings.Contains(string(body), `"not_found"`) {
			t.Errorf("--console=off: GET %s: %d %v %s", path, status, err, body)
		}
	}
	if strings.Contains(off.log(), "operator console") {
		t.Errorf("--console=off logged a console:\n%s", off.log())
	}
}
