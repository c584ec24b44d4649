package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"mime"
	"net/http"
	neturl "net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/monty-go/monty/session/store/tiered"

	"github.com/monty-go/monty/session/apikey"
)

//go:embed templates/*.html static/*
var assets embed.FS

// pages are the console's templates, parsed at first use: not at every
// start of a process that never serves the console.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"size":       byteSize,
		"ago":        ago,
		"clipArgs":   func(s string) string { return clip(s, maxArgs) },
		"time":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"query":      pageURL,
		"fileURL":    fileURL,
		"answerable": answerable,
	}).ParseFS(assets, "templates/*.html"))
})

// Bounds of what a page shows.
const (
	// pageSize is the number of sessions on a page of the list.
	pageSize = 50
	// maxScan is the most sessions (the most recently used) whose state
	// the approvals page reads; it says so when there are more.
	maxScan = 200
	// maxArgs is the most characters of a call's arguments shown.
	maxArgs = 400
	// maxGlobals is the most characters of the JSON globals shown.
	maxGlobals = 64 << 10
	// maxCode is the largest run box request.
	maxCode = 1 << 20
)

func (c *Console) routes() {
	c.mux.HandleFunc("GET /ui/{$}", c.signedIn(c.sessionsPage))
	c.mux.HandleFunc("GET /ui/signin", c.signInPage)
	c.mux.HandleFunc("POST /ui/signin", c.signInForm)
	c.mux.HandleFunc("POST /ui/signout", c.changing(c.signOut))
	c.mux.HandleFunc("GET /ui/approvals", c.signedIn(c.approvalsPage))
	c.mux.HandleFunc("GET /ui/health", c.signedIn(c.healthPage))
	c.mux.HandleFunc("GET /ui/s/{id}", c.signedIn(c.sessionPage))
	c.mux.HandleFunc("GET /ui/s/{id}/files/{path...}", c.signedIn(c.download))
	c.mux.HandleFunc("POST /ui/exec", c.changing(c.exec))
	c.mux.HandleFunc("POST /ui/s/{id}/exec", c.changing(c.exec))
	c.mux.HandleFunc("POST /ui/runs/{run_id}/decide", c.changing(c.decide))
	c.mux.HandleFunc("GET /ui/static/{name}", c.static)
	c.mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, nil, http.StatusNotFound, r.Method+" "+r.URL.Path+" is not a page of the console")
	})
}

// view is what every page template gets.
type view struct {
	Title string
	// Open: no API keys, the console is open as the API is.
	Open bool
	// CSRF is the token of the state-changing forms; empty when signed out.
	CSRF string
	// Data is the page's own.
	Data any
	// Error is a failure to show instead of the page's content.
	Error string
}

// signedIn serves page f to a signed-in request; others are sent to the
// sign-in page (with no keys configured, a request is signed in at once).
func (c *Console) signedIn(f func(w http.ResponseWriter, r *http.Request, s signIn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.current(w, r)
		if !ok {
			http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
			return
		}
		f(w, r, s)
	}
}

// changing serves a state-changing request f: it needs a sign-in, a
// same-origin request and the sign-in's CSRF token (the form's "csrf"
// field, or the X-CSRF-Token header of the run box's script); anything
// else is refused with 403.
func (c *Console) changing(f func(w http.ResponseWriter, r *http.Request, s signIn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.current(w, r)
		switch {
		case !ok:
			c.fail(w, nil, http.StatusForbidden, "not signed in (or the sign-in expired): sign in again")
			return
		case !sameOrigin(r):
			c.fail(w, nil, http.StatusForbidden, "a request from another site was refused")
			return
		}
		token := r.Header.Get("X-CSRF-Token")
		if token == "" {
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			token = r.PostFormValue("csrf")
		}
		if !c.auth.checkCSRF(s, token) {
			c.fail(w, nil, http.StatusForbidden, "the form's CSRF token is missing or wrong: reload the page and try again")
			return
		}
		f(w, r, s)
	}
}

// current returns the request's sign-in. With no API keys configured, a
// request without one gets one (and its cookie) at once: the CSRF tokens
// need a sign-in to be bound to.
func (c *Console) current(w http.ResponseWriter, r *http.Request) (signIn, bool) {
	now := time.Now()
	if ck, err := r.Cookie(cookieName); err == nil {
		if s, ok := c.auth.verify(ck.Value, now); ok && c.b.KnownNamespace(s.ns) {
			return s, true
		}
	}
	if !c.b.Open() {
		return signIn{}, false
	}
	ns, _ := c.b.Namespace("")
	s := c.auth.issue(ns, now)
	http.SetCookie(w, cookie(r, s.value, s.expires))
	return s, true
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.current(w, r); ok {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	c.render(w, http.StatusOK, "signin", view{Title: "Sign in"})
}

func (c *Console) signInForm(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		c.fail(w, nil, http.StatusForbidden, "a request from another site was refused")
		return
	}
	if c.b.Open() {
		// There is nothing to sign in to: current signs everyone in.
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	ns, ok := c.b.Namespace(r.PostFormValue("key"))
	if !ok {
		if d := c.guard.Failed(c.guard.Client(r)); d > 0 {
			w.Header().Set("Retry-After", apikey.RetryAfter(d))
			c.render(w, http.StatusTooManyRequests, "signin", view{Title: "Sign in",
				Error: fmt.Sprintf("too many keys that are not accepted from this address: try again in %s", d.Round(time.Second))})
			return
		}
		c.render(w, http.StatusUnauthorized, "signin", view{Title: "Sign in", Error: "that API key is not accepted by this server"})
		return
	}
	s := c.auth.issue(ns, time.Now())
	http.SetCookie(w, cookie(r, s.value, s.expires))
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, s signIn) {
	c.auth.revoke(s, time.Now())
	http.SetCookie(w, cookie(r, "", time.Time{}))
	http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
}

// render writes page name with v, buffered so that a template failure is
// a 500 rather than half a page.
func (c *Console) render(w http.ResponseWriter, status int, name string, v view) {
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, v); err != nil {
		http.Error(w, "the console failed to render this page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers with an error page (s: the sign-in, nil when there is none
// to show).
func (c *Console) fail(w http.ResponseWriter, s *signIn, status int, msg string) {
	v := view{Title: http.StatusText(status), Error: msg, Open: c.b.Open()}
	if s != nil {
		v.CSRF = c.auth.csrf(*s)
	}
	c.render(w, status, "error", v)
}

// storeFailure answers a Backend failure: not found (404) or another
// error (503: the store; the server's log has the detail).
func (c *Console) storeFailure(w http.ResponseWriter, s signIn, what string, err error) {
	if errors.Is(err, ErrNotFound) {
		c.fail(w, &s, http.StatusNotFound, what+" not found (unknown, or made with another API key)")
		return
	}
	c.fail(w, &s, http.StatusServiceUnavailable, what+" could not be read: "+err.Error())
}

func (c *Console) page(s signIn, title string, data any) view {
	return view{Title: title, Open: c.b.Open(), CSRF: c.auth.csrf(s), Data: data}
}

// sessionsData is the sessions page's.
type sessionsData struct {
	Query          string
	Sessions       []SessionInfo
	Total          int
	Page, Pages    int
	Prev, Next     int
	Approvals      int
	ApprovalsKnown bool
}

func (c *Console) sessionsPage(w http.ResponseWriter, r *http.Request, s signIn) {
	all, err := c.b.Sessions(r.Context(), s.ns)
	if err != nil {
		c.storeFailure(w, s, "the session list", err)
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q != "" {
		all = slices.DeleteFunc(all, func(si SessionInfo) bool { return !strings.Contains(si.ID, q) })
	}
	slices.SortStableFunc(all, func(a, b SessionInfo) int { return b.Modified.Compare(a.Modified) })
	d := sessionsData{Query: q, Total: len(all), Pages: max(1, (len(all)+pageSize-1)/pageSize)}
	d.Page, _ = strconv.Atoi(r.URL.Query().Get("page"))
	d.Page = min(max(d.Page, 1), d.Pages)
	d.Sessions = all[(d.Page-1)*pageSize : min(len(all), d.Page*pageSize)]
	if d.Page > 1 {
		d.Prev = d.Page - 1
	}
	if d.Page < d.Pages {
		d.Next = d.Page + 1
	}
	c.render(w, http.StatusOK, "sessions", c.page(s, "Sessions", d))
}

// sessionData is the session page's.
type sessionData struct {
	State *State
	// Globals is the JSON view, indented and clipped.
	Globals string
	Files   []File
	// FilesErr says why the files could not be listed.
	FilesErr string
}

func (c *Console) sessionPage(w http.ResponseWriter, r *http.Request, s signIn) {
	id := r.PathValue("id")
	st, err := c.b.Inspect(r.Context(), s.ns, id)
	if err != nil {
		c.storeFailure(w, s, fmt.Sprintf("session %q", id), err)
		return
	}
	d := sessionData{State: st, Globals: clip(indentJSON(st.JSON), maxGlobals)}
	if d.Files, err = c.b.Files(r.Context(), s.ns, id); err != nil {
		d.FilesErr = err.Error()
	}
	c.render(w, http.StatusOK, "session", c.page(s, "Session "+id, d))
}

// indentJSON is raw indented for reading (as it is when it is not JSON).
func indentJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

func (c *Console) download(w http.ResponseWriter, r *http.Request, s signIn) {
	id, name := r.PathValue("id"), r.PathValue("path")
	data, err := c.b.ReadFile(r.Context(), s.ns, id, name)
	if err != nil {
		c.storeFailure(w, s, fmt.Sprintf("file %q of session %q", name, id), err)
		return
	}
	// Always a download of opaque bytes: a file the code wrote is never
	// rendered by the browser in the console's origin.
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// approval is a call waiting for a decision, on the approvals page.
type approval struct {
	Session  string
	Run      *Run
	Call     Call
	Modified time.Time
	// Answerable: the console can answer this call now (it is the
	// blocking call, or the run has none).
	Answerable bool
}

// approvalsData is the approvals page's.
type approvalsData struct {
	Approvals []approval
	// Scanned is how many sessions were read, Total how many there are.
	Scanned, Total int
	// Unreadable are sessions whose state could not be read.
	Unreadable []string
	// Archived is how many of the sessions read are in a tiered store's
	// archive: not read, since reading one restores it to the hot tier
	// (open the session to see its run).
	Archived int
}

func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, s signIn) {
	all, err := c.b.Sessions(r.Context(), s.ns)
	if err != nil {
		c.storeFailure(w, s, "the session list", err)
		return
	}
	slices.SortStableFunc(all, func(a, b SessionInfo) int { return b.Modified.Compare(a.Modified) })
	d := approvalsData{Total: len(all), Scanned: min(len(all), maxScan)}
	for _, si := range all[:d.Scanned] {
		if si.Source == tiered.SourceArchive {
			d.Archived++
			continue
		}
		st, err := c.b.Inspect(r.Context(), s.ns, si.ID)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			d.Unreadable = append(d.Unreadable, si.ID)
			continue
		}
		if st.Paused == nil {
			continue
		}
		for _, call := range st.Paused.Calls {
			if call.Approval {
				d.Approvals = append(d.Approvals, approval{Session: si.ID, Run: st.Paused, Call: call, Modified: st.Modified, Answerable: answerable(st.Paused, call)})
			}
		}
	}
	c.render(w, http.StatusOK, "approvals", c.page(s, "Approvals waiting", d))
}

// answerable reports whether call of run can be answered on its own: the
// blocking call must be, and async calls can be when none blocks.
func answerable(run *Run, call Call) bool {
	if call.Blocking {
		return true
	}
	return !slices.ContainsFunc(run.Calls, func(c Call) bool { return c.Blocking })
}

func (c *Console) healthPage(w http.ResponseWriter, r *http.Request, s signIn) {
	c.render(w, http.StatusOK, "health", c.page(s, "Health", c.b.Health(r.Context())))
}

// decided is the result page of a decision.
type decided struct {
	CallID   string
	Approved bool
	Outcome  Outcome
}

func (c *Console) decide(w http.ResponseWriter, r *http.Request, s signIn) {
	runID, callID := r.PathValue("run_id"), r.PostFormValue("call")
	var approve bool
	switch r.PostFormValue("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		c.fail(w, &s, http.StatusBadRequest, `the form's decision must be "approve" or "deny"`)
		return
	}
	if callID == "" {
		c.fail(w, &s, http.StatusBadRequest, "the form names no call")
		return
	}
	out := c.b.Decide(r, s.ns, runID, []Decision{{CallID: callID, Approve: approve}})
	status := http.StatusOK
	if out.Error != "" {
		status = out.HTTPStatus
	}
	c.render(w, status, "decided", c.page(s, "Decision", decided{CallID: callID, Approved: approve, Outcome: out}))
}

// execRequest is the run box's request: code for the path's session (or
// a new one).
type execRequest struct {
	Code string `json:"code"`
}

func (c *Console) exec(w http.ResponseWriter, r *http.Request, s signIn) {
	var req execRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCode))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, `the run box sends {"code": "..."} as JSON, at most 1 MiB`, http.StatusBadRequest)
		return
	}
	// The /exec body names the path's session, whatever the script sent.
	out, _ := json.Marshal(map[string]string{"code": req.Code, "session_id": r.PathValue("id")})
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
	r.Header.Set("Content-Type", "application/json")
	c.b.Exec(w, r, s.ns)
}

func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	data, err := assets.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(data)
}

// byteSize is n bytes for people.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ago is how long ago t was, roughly.
func ago(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// clip cuts s to at most n bytes (at a rune boundary), marked with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// fileURL is the download URL of file name of session id, each segment
// of the path escaped (a name may hold '?', '#' or '%').
func fileURL(id, name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = neturl.PathEscape(s)
	}
	return "/ui/s/" + neturl.PathEscape(id) + "/files/" + strings.Join(segs, "/")
}

// pageURL is the sessions page's URL for query q and page p.
func pageURL(q string, p int) string {
	v := make([]string, 0, 2)
	if q != "" {
		v = append(v, "q="+neturl.QueryEscape(q))
	}
	if p > 1 {
		v = append(v, "page="+strconv.Itoa(p))
	}
	if len(v) == 0 {
		return "/ui/"
	}
	return "/ui/?" + strings.Join(v, "&")
}
