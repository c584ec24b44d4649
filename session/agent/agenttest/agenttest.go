// Package agenttest holds what the tests of the agent adapters (the
// modules under session/agent/adapters) share: an executor whose registry
// offers a Go function, the Python that their scenarios have the model
// run and what its output must say, checks of the tools a model is
// given and of the Go errors an adapter returns, and a local model API
// over HTTP for an SDK's client to call.
//
// The scenarios stay in each adapter's tests, written against its SDK: a
// Go function called from Python, state kept across two turns of a
// conversation and apart between two, a Python exception that goes back
// to the model as the tool's error, several calls in one message, a run
// paused at a client tool and resumed, the errors the caller must
// handle, and conversations run in parallel. This package imports no
// SDK.
package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/tools"
)

// FuncName is the name of the Go function that Registry offers: double(n)
// returns 2*n. The tool's description briefs the model on it, so it
// appears there too.
const FuncName = "double"

// Double is the function FuncName names.
func Double() tools.Function {
	return tools.MustFunc(tools.Schema{
		Name:        FuncName,
		Description: "Double a number.",
		Params:      []tools.Param{{Name: "n", Description: "the number"}},
	}, func(n int) (int, error) { return 2 * n, nil })
}

// Registry returns a registry that offers Double, failing t if it cannot
// be made.
func Registry(t testing.TB) *tools.Registry {
	t.Helper()
	fns, err := tools.NewRegistry(Double())
	if err != nil {
		t.Fatalf("tools.NewRegistry: %v", err)
	}
	return fns
}

// Executor returns an executor whose registry is Registry's and whose
// sessions live in memory (a memstore), with a keeper of its own closed
// when the test ends.
func Executor(t testing.TB) *agent.Executor {
	t.Helper()
	exec, err := newExecutor(t, agent.ExecutorOptions{
		Session:   session.Options{Store: memstore.New(memstore.Options{})},
		Functions: Registry(t),
	})
	if err != nil {
		t.Fatalf("agent.NewExecutor: %v", err)
	}
	return exec
}

// keepers are the keepers of the executors this package made, by
// executor: CallerErrors closes one to see calls fail.
var keepers sync.Map // *agent.Executor → *session.Manager

// Keeper returns a keeper of live sessions in st, closed when the test
// ends.
func Keeper(t testing.TB, st store.Store) *session.Manager {
	t.Helper()
	k := session.NewManager(session.Options{Store: st}, session.ManagerOptions{})
	t.Cleanup(k.Close)
	return k
}

// newExecutor is agent.NewExecutor(opts), with a keeper of its own when
// opts has none, remembered for CallerErrors.
func newExecutor(t testing.TB, opts agent.ExecutorOptions) (*agent.Executor, error) {
	t.Helper()
	if opts.Keeper == nil {
		opts.Keeper = Keeper(t, opts.Session.Store)
	}
	e, err := agent.NewExecutor(opts)
	if err == nil {
		keepers.Store(e, opts.Keeper)
	}
	return e, err
}

// Adapter returns the adapter that newAdapter (an adapter package's New)
// makes over a new Executor, and the executor.
func Adapter[A any](t testing.TB, newAdapter func(*agent.Executor) A) (A, *agent.Executor) {
	t.Helper()
	exec := Executor(t)
	return newAdapter(exec), exec
}

// The Python of the scenarios, and what its output says.
const (
	// CallDouble calls the Go function and prints its result; the output
	// has WantDoubleCall (the executor's note of the call) and
	// WantDoublePrint.
	CallDouble      = "print('double is', double(21))"
	WantDoubleCall  = "[double returned 42]"
	WantDoublePrint = "double is 42"

	// SetSecret sets a variable in turn 1 of a conversation (and prints
	// "set"); GetSecret reads it in turn 2, whose value is WantSecret.
	// ReadSecret, in another conversation, fails with a NameError that
	// names it.
	SetSecret  = "secret = double(20) + 2\nprint('set')"
	GetSecret  = "secret * 10"
	WantSecret = "420"
	ReadSecret = "secret"

	// DivideByZero fails with a ZeroDivisionError after setting total,
	// which a failed call does not keep; Raise fails with WantRaise;
	// Divide sets total again and has the value WantDivide.
	DivideByZero = "total = 10\ntotal / 0"
	Raise        = "raise ValueError('no such order: 7')"
	WantRaise    = "ValueError: no such order: 7"
	Divide       = "total = 10\ntotal / 4"
	WantDivide   = "2.5"

	// PauseArgs is execute_python's arguments (a JSON object) for code
	// that pauses at the client tool ask_user; resumed with "Paris" (see
	// ResumeArgs), the run's value is WantResumed.
	PauseArgs   = `{"code": "city = ask_user('Which city?')\ncity.upper()", "client_tools": [{"name": "ask_user"}]}`
	WantResumed = "'PARIS'"

	// BadArgs is execute_python's arguments without code: the tool's
	// output has WantCodeRequired.
	BadArgs          = `{"source": "n"}`
	WantCodeRequired = `"code" is required`

	// UnknownTool is a tool the adapters do not have, called with
	// UnknownToolArgs: the output has WantUnknownTool (or "Unknown
	// function" where the API speaks of functions).
	UnknownTool     = "search_web"
	UnknownToolArgs = `{"q": "monty"}`
	WantUnknownTool = `Unknown tool "search_web"`

	// ResumeNothing is resume_python's arguments for a run that is not
	// paused: the output has WantNotPaused.
	ResumeNothing = `{"run_id": "nope", "results": []}`
	WantNotPaused = `run_id "nope" is not paused`

	// GetV is the second call of each conversation that Parallel runs,
	// after SetV; its value is WantV.
	GetV = "v * 100"
)

// SetV is the first call of conversation i of those Parallel runs.
func SetV(i int) string { return fmt.Sprintf("v = %d", i) }

// WantV is the value of GetV in conversation i of those Parallel runs.
func WantV(i int) string { return fmt.Sprint(i * 100) }

// BadConversationKeys are conversation keys that are no thread key, which
// the adapters refuse with agent.ErrBadArgs.
func BadConversationKeys() []string { return []string{"", "a/b", "../x"} }

// ToolCall is a call of a tool that a scripted model makes, and what the
// tool's output must say of it.
type ToolCall struct {
	// ID is the call's id; Name the tool called; Args its arguments, a
	// JSON object.
	ID, Name, Args string
	// Want is the output of a call that succeeds; the output of one that
	// fails has it.
	Want string
	// Failed says the output is the tool's error (the call failed).
	Failed bool
}

// SeveralCalls are the calls of one message in the scenario of several
// calls, in order, with what each one's output says: the first sets n
// (no output), the second reads it, the third has no code, the fourth
// calls UnknownTool, the fifth resumes no run, and the last calls the Go
// function with n. Only the third, fourth and fifth fail.
func SeveralCalls() []ToolCall {
	return []ToolCall{
		{ID: "call_1", Name: agent.ToolName, Args: Args("n = 5"), Want: agent.NoOutput},
		{ID: "call_2", Name: agent.ToolName, Args: Args("n + 1"), Want: "6"},
		{ID: "call_3", Name: agent.ToolName, Args: BadArgs, Want: WantCodeRequired, Failed: true},
		{ID: "call_4", Name: UnknownTool, Args: UnknownToolArgs, Want: WantUnknownTool, Failed: true},
		{ID: "call_5", Name: agent.ResumeToolName, Args: ResumeNothing, Want: WantNotPaused, Failed: true},
		{ID: "call_6", Name: agent.ToolName, Args: Args("double(n)"), Want: "[double returned 10]\n10"},
	}
}

// AssertOutput reports an error unless out, the tool's output for c, is
// what c wants (see Want).
func (c ToolCall) AssertOutput(t testing.TB, out string) {
	t.Helper()
	if c.Failed {
		AssertContains(t, out, c.Want)
	} else if out != c.Want {
		t.Errorf("%s: output %q, want %q", c.ID, out, c.Want)
	}
}

// Args is execute_python's arguments for code, as a model writes them: a
// JSON object.
func Args(code string) string { return `{"code": ` + JSONString(code) + `}` }

// Input is Args as a decoded JSON object, for SDKs that hand tools their
// input decoded.
func Input(code string) map[string]any { return map[string]any{"code": code} }

// PauseInput is PauseArgs decoded.
func PauseInput() map[string]any {
	var v map[string]any
	if err := json.Unmarshal([]byte(PauseArgs), &v); err != nil {
		panic(err)
	}
	return v
}

// JSONString is s as a JSON string literal.
func JSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var (
	runIDPattern  = regexp.MustCompile(`run_id "([^"]+)"`)
	callIDPattern = regexp.MustCompile(`- id "([^"]+)": ask_user\('Which city\?'\)`)
)

// RunID is the run_id that the output of a paused run gives, as a model
// reads it, or "" when there is none.
func RunID(out string) string {
	if m := runIDPattern.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// AskUserID is the id of the ask_user('Which city?') call that the output
// of a run paused by PauseArgs lists, or "" when there is none.
func AskUserID(out string) string {
	if m := callIDPattern.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// ResumeInput is resume_python's input that answers the call callID of
// the paused run runID with "Paris".
func ResumeInput(runID, callID string) map[string]any {
	return map[string]any{"run_id": runID, "results": []any{map[string]any{"id": callID, "value": "Paris"}}}
}

// ResumeArgs is ResumeInput as JSON. When out, the output of a run paused
// by PauseArgs, gives no run_id or no ask_user call, ok is false (a
// model would not resume).
func ResumeArgs(out string) (args string, ok bool) {
	runID, callID := RunID(out), AskUserID(out)
	if runID == "" || callID == "" {
		return "", false
	}
	b, _ := json.Marshal(ResumeInput(runID, callID))
	return string(b), true
}

// AssertContains reports an error unless out contains each of want.
func AssertContains(t testing.TB, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%q does not contain %q", out, w)
		}
	}
}

// AssertDoubled reports an error unless out is the output of CallDouble.
func AssertDoubled(t testing.TB, out string) {
	t.Helper()
	AssertContains(t, out, WantDoubleCall, WantDoublePrint)
}

// AssertNameError reports an error unless out is the NameError of
// ReadSecret.
func AssertNameError(t testing.TB, out string) {
	t.Helper()
	AssertContains(t, out, "NameError", "secret")
}

// AssertTraceback reports an error unless out is a traceback that ends
// with exception.
func AssertTraceback(t testing.TB, out, exception string) {
	t.Helper()
	AssertContains(t, out, "Traceback", exception)
}

// AssertTool reports an error unless a tool as a model receives it (its
// name, its description and its parameters' JSON schema, which is
// encoded to JSON first unless it is JSON already) is want.
func AssertTool(t testing.TB, want tools.Tool, name, description string, schema any) {
	t.Helper()
	if name != want.Name {
		t.Errorf("tool name %q, want %q", name, want.Name)
	}
	if description != want.Description {
		t.Errorf("tool %s: description\n%s\nwant\n%s", want.Name, description, want.Description)
	}
	got, ok := schema.(json.RawMessage)
	if !ok {
		var err error
		if got, err = json.Marshal(schema); err != nil {
			t.Errorf("tool %s: schema %v: %v", want.Name, schema, err)
			return
		}
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("tool %s: schema %s: %v", want.Name, got, err)
		return
	}
	if err := json.Unmarshal(want.Parameters, &w); err != nil {
		t.Errorf("tool %s: want schema %s: %v", want.Name, want.Parameters, err)
		return
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("tool %s: schema\n%s\nwant\n%s", want.Name, got, want.Parameters)
	}
}

// AssertToolObjects reports an error unless got, the tools of a request
// as JSON objects, are want in order, each with its "name",
// "description" and, under schemaKey, its JSON schema (see AssertTool).
func AssertToolObjects(t testing.TB, want []tools.Tool, got []map[string]any, schemaKey string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d tools, want %d: %v", len(got), len(want), got)
		return
	}
	for i, w := range want {
		name, _ := got[i]["name"].(string)
		description, _ := got[i]["description"].(string)
		AssertTool(t, w, name, description, got[i][schemaKey])
	}
}

// RequireCause calls call 50 times with ctx, which has ended with cause,
// and stops t unless each returns an error that is cause: the executor
// may see the context end at different points of a call (it races with
// taking the session's turn), and each must give the cause.
func RequireCause(t testing.TB, ctx context.Context, cause error, call func(context.Context) error) {
	t.Helper()
	for range 50 {
		if err := call(ctx); !errors.Is(err, cause) {
			t.Fatalf("got %v, want an error that is %v", err, cause)
		}
	}
}

// CallerErrors checks the Go errors of an adapter, the few its caller
// must handle, through calls: each runs a call of the executor's tools
// (one that the executor answers, with the tool's output) through the
// adapter, in conversation with ctx, and returns what the adapter
// returns, its output and its error. The error must be none for a valid
// key; one that matches agent.ErrBadArgs for each of
// BadConversationKeys; ctx's cause when ctx has ended (context.Canceled,
// or the cause it was given, wherever the call meets the end; see
// RequireCause); and, once the keeper of exec (the adapter's executor,
// made by this package) is closed, one that matches session.ErrClosed:
// CallerErrors closes it. Each error's
// text has name, the adapter's package name, then ": " (after words of
// the SDK's own, if it wraps the adapter's error), and no output comes
// with it (out is nil, empty or a zero value).
func CallerErrors(t testing.TB, exec *agent.Executor, name string, calls ...func(ctx context.Context, conversation string) (out any, err error)) {
	t.Helper()
	want := func(i int, call func(context.Context, string) (any, error), ctx context.Context, conversation string, target error) {
		t.Helper()
		out, err := call(ctx, conversation)
		switch {
		case !errors.Is(err, target):
			t.Errorf("call %d: got %v, want an error that is %v", i, err, target)
		case !strings.Contains(err.Error(), name+": "):
			t.Errorf("call %d: error %q does not name %q", i, err, name+": ")
		case !empty(out):
			t.Errorf("call %d: output %v with the error %v", i, out, err)
		}
	}
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	cause := errors.New("the user left")
	left, leave := context.WithCancelCause(ctx)
	leave(cause)
	for i, call := range calls {
		if _, err := call(ctx, "ok"); err != nil {
			t.Errorf("call %d: %v", i, err)
		}
		for _, key := range BadConversationKeys() {
			want(i, call, ctx, key, agent.ErrBadArgs)
		}
		want(i, call, canceled, "ok", context.Canceled)
		RequireCause(t, left, cause, func(ctx context.Context) error {
			_, err := call(ctx, "ok")
			return err
		})
	}
	keeper, ok := keepers.Load(exec)
	if !ok {
		t.Fatal("agenttest.CallerErrors: exec was not made by agenttest, so its keeper cannot be closed")
	}
	keeper.(*session.Manager).Close()
	for i, call := range calls {
		want(i, call, ctx, "closed", session.ErrClosed)
	}
}

// empty reports whether out is nil, a zero value, or an empty slice, map
// or string.
func empty(out any) bool {
	if out == nil {
		return true
	}
	v := reflect.ValueOf(out)
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String:
		return v.Len() == 0
	}
	return v.IsZero()
}

// Parallel runs fn for n conversations at once, whose keys are par-0,
// par-1, …, waits for them all, and stops t if any returned an error
// (reporting each).
func Parallel(t testing.TB, n int, fn func(i int, conversation string) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = fn(i, fmt.Sprintf("par-%d", i)) })
	}
	wg.Wait()
	failed := false
	for i, err := range errs {
		if err != nil {
			t.Errorf("par-%d: %v", i, err)
			failed = true
		}
	}
	if failed {
		t.FailNow()
	}
}

// Objects is obj[key] as a list of JSON objects, as a request body
// decoded into a map holds it (a request's messages, a message's
// content blocks), failing t when it is not one.
func Objects(t testing.TB, obj map[string]any, key string) []map[string]any {
	t.Helper()
	raw, ok := obj[key].([]any)
	if !ok {
		t.Fatalf("no list %q in %v", key, obj)
	}
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		if out[i], ok = v.(map[string]any); !ok {
			t.Fatalf("%s[%d] is no object: %v", key, i, v)
		}
	}
	return out
}

// Script is what a scripted model answers and what it was asked: the
// replies it gives, in order, each made from the request it answers, and
// the requests it received, for the test to check. Its zero value has
// nothing queued; it is safe for concurrent use.
type Script[Req, Reply any] struct {
	mu       sync.Mutex
	replies  []func(req Req) Reply
	requests []Req
}

// Reply queues replies.
func (s *Script[Req, Reply]) Reply(replies ...Reply) {
	for _, r := range replies {
		s.ReplyWith(func(Req) Reply { return r })
	}
}

// ReplyWith queues a reply made from the request it answers. fn may run
// on a goroutine other than the test's: it must not stop the test.
func (s *Script[Req, Reply]) ReplyWith(fn func(req Req) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, fn)
}

// Answer records req and returns the next reply, made from it; ok is
// false when none is queued.
func (s *Script[Req, Reply]) Answer(req Req) (reply Reply, ok bool) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if len(s.replies) == 0 {
		s.mu.Unlock()
		return reply, false
	}
	next := s.replies[0]
	s.replies = s.replies[1:]
	s.mu.Unlock()
	return next(req), true
}

// Request returns the i-th request received, stopping t when there are
// not that many.
func (s *Script[Req, Reply]) Request(t testing.TB, i int) Req {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.requests) {
		t.Fatalf("request %d of %d received", i, len(s.requests))
	}
	return s.requests[i]
}

// Count is how many requests were received.
func (s *Script[Req, Reply]) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// API is a local model API over HTTP, for an SDK's client to call: it
// answers each request it accepts with the next reply of its Script (a
// JSON body in the shape the API returns, queued as is or made from the
// request's body, decoded) and keeps the request bodies for the test to
// check. It stops when the test ends.
type API struct {
	Script[map[string]any, string]

	// URL is the server's base URL, for the client's options.
	URL string

	opts APIOptions
}

// APIOptions says how an API speaks.
type APIOptions struct {
	// Accept returns 0 when the API takes r (its method, path and
	// credentials are right), and otherwise the status and message of
	// the error it answers with. Nil takes every request.
	Accept func(r *http.Request) (status int, message string)
	// Fail writes an error response in the API's shape. It also answers
	// a body that is not JSON (400, "bad JSON") and a request with no
	// reply queued (500, "no reply queued"). Nil writes http.Error's.
	Fail func(w http.ResponseWriter, status int, message string)
	// Header is set on every reply, Content-Type among it.
	Header http.Header
}

// NewAPI starts an API that speaks as opts says.
func NewAPI(t testing.TB, opts APIOptions) *API {
	t.Helper()
	if opts.Fail == nil {
		opts.Fail = func(w http.ResponseWriter, status int, message string) { http.Error(w, message, status) }
	}
	a := &API{opts: opts}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// ServeHTTP answers a request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if a.opts.Accept != nil {
		if status, message := a.opts.Accept(r); status != 0 {
			a.opts.Fail(w, status, message)
			return
		}
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		a.opts.Fail(w, http.StatusBadRequest, "bad JSON")
		return
	}
	reply, ok := a.Answer(req)
	if !ok {
		a.opts.Fail(w, http.StatusInternalServerError, "no reply queued")
		return
	}
	for k, v := range a.opts.Header {
		w.Header()[k] = v
	}
	_, _ = io.WriteString(w, reply)
}
