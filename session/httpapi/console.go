package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/apikey"
	"github.com/monty-go/monty/session/httpapi/console"
	"github.com/monty-go/monty/session/store"
)

// consoleBackend serves the operator console (package console, mounted at
// /ui) from the Handler: the store reads of the state endpoints, the
// resume of POST /runs/{run_id}/resume and the execution of POST /exec.
type consoleBackend struct {
	h *Handler
	// namespaces are the namespaces of the configured keys.
	namespaces map[string]bool
}

// mountConsole mounts the operator console at /ui.
func (h *Handler) mountConsole() error {
	b := &consoleBackend{h: h, namespaces: map[string]bool{}}
	for _, k := range h.opts.APIKeys {
		ns, _ := h.keys.Namespace(k)
		b.namespaces[ns] = true
	}
	c, err := console.New(b, h.opts.Session.SigningKey, console.Options{Guard: h.guard})
	if err != nil {
		return fmt.Errorf("%w: the operator console: %w", ErrConfig, err)
	}
	h.mux.HandleFunc("/ui/", h.instrument("console", func(w http.ResponseWriter, r *http.Request) *apiError {
		c.ServeHTTP(w, r)
		return nil
	}))
	h.mux.HandleFunc("GET /ui", h.instrument("console", func(w http.ResponseWriter, r *http.Request) *apiError {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return nil
	}))
	return nil
}

func (b *consoleBackend) Namespace(key string) (string, bool) { return b.h.keys.Namespace(key) }

func (b *consoleBackend) KnownNamespace(ns string) bool {
	if b.Open() {
		return ns == apikey.Public
	}
	return b.namespaces[ns]
}

func (b *consoleBackend) Open() bool { return b.h.keys.Len() == 0 }

// Sessions lists the store's entries of namespace ns whose ids are
// session ids of the API (entries the store cannot read are left out).
func (b *consoleBackend) Sessions(ctx context.Context, ns string) ([]console.SessionInfo, error) {
	infos, err := b.h.opts.Session.Store.List(ctx)
	if _, err = store.SplitListError(err); err != nil {
		return nil, b.consoleError(ctx, err)
	}
	var out []console.SessionInfo
	for _, in := range infos {
		id, ok := strings.CutPrefix(in.ID, ns+"/")
		if !ok || checkSessionID(id) != nil {
			continue
		}
		out = append(out, console.SessionInfo{ID: id, Size: in.Size, Modified: in.Modified, Source: in.Source})
	}
	return out, nil
}

// Inspect reads session id's stored blob and describes it, checked with
// the session's signing key (or the legacy one), without an interpreter.
func (b *consoleBackend) Inspect(ctx context.Context, ns, id string) (*console.State, error) {
	if checkSessionID(id) != nil {
		return nil, console.ErrNotFound
	}
	var out *console.State
	err := b.slot(ctx, func() error {
		obj, err := b.h.opts.Session.Store.Get(ctx, storeID(ns, id))
		if err != nil {
			return err
		}
		in, err := session.Inspect(obj.Data, b.h.stateKey(ns, id))
		for _, key := range b.h.legacyKeys() {
			if err == nil {
				break
			}
			in, err = session.Inspect(obj.Data, key)
		}
		if err != nil {
			return err
		}
		out = &console.State{
			SessionInfo: console.SessionInfo{ID: id, Size: obj.Info.Size, Modified: obj.Info.Modified, Source: obj.Info.Source},
			Globals:     in.Globals, JSON: in.JSON,
		}
		if p := in.Paused; p != nil {
			run := &console.Run{ID: runID(id, p.RunID), Expires: p.Expires}
			for _, c := range p.Calls {
				info := callInfo(c, b.h.opts.Functions)
				run.Calls = append(run.Calls, console.Call{ID: c.ID, Name: info.Name, Approval: info.Approval, Blocking: c.Blocking,
					MayHaveRun: c.MayHaveRun, Args: argsText(info)})
			}
			out.Paused = run
		}
		for _, d := range in.Decisions {
			out.Decisions = append(out.Decisions, console.Decided{Time: d.Time, Who: d.Who, Tool: d.Tool, CallID: d.CallID, Args: d.Args,
				Approved: d.Approved, Outcome: d.Outcome, Exception: d.Exception})
		}
		return nil
	})
	return out, err
}

// argsText is a call's arguments as JSON text, {"args": [...], "kwargs":
// {...}}, with its characters as they are: the console escapes them.
func argsText(info ToolCallInfo) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{"args": info.Args, "kwargs": info.Kwargs})
	return strings.TrimSuffix(buf.String(), "\n")
}

func (b *consoleBackend) Files(ctx context.Context, ns, id string) ([]console.File, error) {
	if b.h.files() == nil || checkSessionID(id) != nil {
		return nil, nil
	}
	var out []console.File
	err := b.slot(ctx, func() error {
		files, err := session.ListFiles(ctx, storeID(ns, id), b.h.fileOptions(ns, id))
		for _, f := range files {
			out = append(out, console.File{Path: f.Path, Size: f.Size, Modified: f.Modified})
		}
		return err
	})
	return out, err
}

func (b *consoleBackend) ReadFile(ctx context.Context, ns, id, name string) ([]byte, error) {
	if b.h.files() == nil || checkSessionID(id) != nil {
		return nil, console.ErrNotFound
	}
	var data []byte
	err := b.slot(ctx, func() (err error) {
		data, err = session.ReadFile(ctx, storeID(ns, id), name, b.h.fileOptions(ns, id))
		return err
	})
	return data, err
}

// slot does a read that holds a blob in memory with a slot, as the state
// and file downloads do, and maps its error for the console.
func (b *consoleBackend) slot(ctx context.Context, read func() error) error {
	var err error
	if aerr := b.h.withSlot(func() *apiError {
		err = read()
		return nil
	}); aerr != nil {
		return errors.New(aerr.msg)
	}
	return b.consoleError(ctx, err)
}

// consoleError is err as the console tells it: console.ErrNotFound for a
// session or file that is not there, else the message a client of the
// API would get; the store's own wording, which may name hosts and
// paths, goes to the log.
func (b *consoleBackend) consoleError(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrInvalid):
		return console.ErrNotFound
	}
	aerr := storeError(err)
	b.h.log.LogAttrs(ctx, slog.LevelWarn, "console: reading the store failed", slog.String("error", aerr.code), slog.String("detail", err.Error()))
	return errors.New(aerr.msg)
}

// Decide resumes the run as POST /runs/{run_id}/resume does, with an
// approve answer for each decision, and reads its answer.
func (b *consoleBackend) Decide(r *http.Request, ns, apiRun string, decisions []console.Decision) console.Outcome {
	req := &ResumeRequest{}
	for _, d := range decisions {
		req.Results = append(req.Results, ToolResultSpec{ID: d.CallID, Approve: &d.Approve})
	}
	r = r.Clone(r.Context())
	r.Header.Del("Accept") // the JSON answer, not a stream
	rec := &answerRecorder{header: http.Header{}}
	if aerr := b.h.resumeRun(rec, r, ns, apiRun, req); aerr != nil {
		return console.Outcome{Error: aerr.code + ": " + aerr.msg, HTTPStatus: aerr.status}
	}
	var resp ExecResponse
	if err := json.Unmarshal(rec.body, &resp); err != nil {
		return console.Outcome{Error: "internal: the resume's answer is not JSON: " + err.Error(), HTTPStatus: http.StatusInternalServerError}
	}
	out := console.Outcome{Status: resp.Status, RunID: resp.RunID, SessionID: resp.SessionID, Stdout: resp.Stdout, Stderr: resp.Stderr, Result: resp.ResultRepr}
	if e := resp.Error; e != nil {
		out.Exception = e.Type + ": " + e.Message
	}
	return out
}

// answerRecorder keeps an answer written to it.
type answerRecorder struct {
	header http.Header
	body   []byte
}

func (a *answerRecorder) Header() http.Header { return a.header }

func (a *answerRecorder) Write(p []byte) (int, error) {
	a.body = append(a.body, p...)
	return len(p), nil
}

func (a *answerRecorder) WriteHeader(int) {}

// Exec runs the console's run box request as POST /exec.
func (b *consoleBackend) Exec(w http.ResponseWriter, r *http.Request, ns string) {
	if aerr := b.h.exec(w, r, ns); aerr != nil {
		writeError(w, aerr)
	}
}

// Health is GET /health and GET /health/store in one.
func (b *consoleBackend) Health(ctx context.Context) console.Health {
	out := console.Health{Status: "ok"}
	if b.h.Draining() {
		out.Status = "shutting_down"
	}
	run := b.h.startProbe()
	select {
	case <-run.done:
	case <-ctx.Done():
		out.StoreStatus = "not checked: the request ended first"
		return out
	}
	res := run.result
	out.Store, out.StoreStatus, out.Duration = res.Store, res.Status, time.Duration(res.DurationMS*float64(time.Millisecond))
	for _, c := range res.Checks {
		out.Checks = append(out.Checks, console.Check{Name: c.Name, Status: c.Status, Error: c.Error, Message: c.Message, Duration: time.Duration(c.DurationMS * float64(time.Millisecond))})
	}
	return out
}
