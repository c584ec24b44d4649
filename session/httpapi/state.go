package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/tiered"
)

// StateInfo is the body of GET /state/{id}/info.
type StateInfo struct {
	Exists    bool   `json:"exists"`
	SessionID string `json:"session_id"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
	// Hash is the hex sha256 of the blob (the ETag of GET /state/{id}).
	Hash       string     `json:"hash,omitempty"`
	CreatedAt  *time.Time `json:"created_at,omitempty"`
	ModifiedAt *time.Time `json:"modified_at,omitempty"`
	// ExpiresAt is absent when the state does not expire.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Source is the backend holding it: "hot" or "archive" for a tiered
	// store, else "redis", "s3", "dir" or "memory".
	Source string `json:"source,omitempty"`
	// Decisions are the last decisions on the session's calls that
	// waited for a person's approval, oldest first (session.MaxDecisions
	// at most): who decided (an API key's name, never the key), when,
	// what, and the outcome. Absent when none, when the stored state
	// cannot be read, or while it is in a tiered store's archive (reading
	// it would restore it).
	Decisions []session.Decision `json:"decisions,omitempty"`
	// Paused is the run the session waits on, as a paused /exec answers
	// it (run_id, calls, run_expires): client tools or a person's
	// approval, also of a monty.v1 feed's call. Absent when none, and
	// when Decisions would be.
	Paused *PausedInfo `json:"paused,omitempty"`
}

// PausedInfo is the run a session waits on (StateInfo.Paused).
type PausedInfo struct {
	// RunID is the run_id POST /runs/{run_id}/resume takes.
	RunID string `json:"run_id"`
	// Calls are the calls the run waits on.
	Calls []ToolCallInfo `json:"calls"`
	// RunExpires is when the run stops waiting (RFC 3339).
	RunExpires string `json:"run_expires"`
}

// UploadResponse is the body of a 201 answer to POST /state/{id}.
type UploadResponse struct {
	Message string `json:"message"`
	Size    int64  `json:"size"`
	Hash    string `json:"hash"`
}

// pathID returns the store id for the {id} of the request path.
func pathID(r *http.Request, ns string) (string, string, *apiError) {
	id := r.PathValue("id")
	if aerr := checkSessionID(id); aerr != nil {
		return "", "", aerr
	}
	return id, storeID(ns, id), nil
}

func (h *Handler) getState(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	_, sid, aerr := pathID(r, ns)
	if aerr != nil {
		return aerr
	}
	w.Header().Set("Cache-Control", "private, no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		// The client may have the blob already: the store's metadata says,
		// without fetching the blob or taking a slot.
		info, err := h.opts.Session.Store.Stat(r.Context(), sid)
		if err != nil {
			return storeError(err)
		}
		if etagMatch(inm, info.SHA256) {
			w.Header().Set("ETag", `"`+info.SHA256+`"`)
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
	}
	// A download holds the whole blob (up to MaxStateSize) in memory: it
	// takes a slot, so that memory is bounded by the slots.
	return h.withSlot(func() *apiError {
		obj, err := h.opts.Session.Store.Get(r.Context(), sid)
		if err != nil {
			return storeError(err)
		}
		w.Header().Set("ETag", `"`+obj.Info.SHA256+`"`)
		if etagMatch(r.Header.Get("If-None-Match"), obj.Info.SHA256) {
			// Replaced between the Stat and the Get by the one the client has.
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(obj.Data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(obj.Data)
		count(h.metrics.downloads)
		return nil
	})
}

// etagMatch reports whether an If-None-Match or If-Match header names the
// hash (quoted or not, weak or strong, in a list, or "*").
func etagMatch(header, hash string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		tag = strings.TrimPrefix(tag, "W/")
		if tag == "*" || strings.Trim(tag, `"`) == hash && hash != "" {
			return true
		}
	}
	return false
}

func (h *Handler) uploadState(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	id, sid, aerr := pathID(r, ns)
	if aerr != nil {
		return aerr
	}
	key, aerr := h.requestKey(r)
	if aerr != nil {
		return aerr
	}
	max := h.opts.Session.MaxStateSize
	if r.ContentLength > max {
		count(h.metrics.largeUploads)
		return tooLarge(codeStateTooLarge, "the state", r.ContentLength, max)
	}
	// The body is held in memory (up to MaxStateSize) and hashed: an upload
	// takes a slot like an execution, so that memory is bounded by the
	// slots. (Slow senders are bounded by the server's read timeout.)
	return h.withSlot(func() *apiError {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			count(h.metrics.largeUploads)
			return tooLarge(codeStateTooLarge, "the state", -1, max)
		}
		if err != nil {
			return &apiError{status: http.StatusBadRequest, code: "invalid_state", msg: "reading the body: " + err.Error()}
		}
		// Verify format, checksum and signature before storing: only blobs this
		// service (or one sharing its signing key) wrote for this very session
		// of this API key may ever be loaded. Inspect does not decompress the
		// dump: its cost is the blob's size, whatever the dump expands to.
		in, err := session.Inspect(data, h.stateKey(ns, id))
		if err != nil {
			count(h.metrics.invalidUploads)
			msg := err.Error()
			if strings.Contains(msg, "signature") {
				msg += "; a blob is accepted only by the session id (and API key) it was downloaded from"
			}
			return &apiError{status: http.StatusBadRequest, code: "invalid_state", msg: msg}
		}
		if mem := h.opts.Session.Limits.MaxMemory; mem > 0 && in.DumpSize > mem {
			// It could never be loaded: refuse it now rather than at every /exec.
			count(h.metrics.largeUploads)
			return &apiError{status: statusTooLarge, code: codeStateTooLarge, msg: fmt.Sprintf(
				"the state's interpreter dump is %s, more than the server's memory limit of %s per execution, so it could never be loaded; nothing was stored",
				byteSize(in.DumpSize), byteSize(mem))}
		}
		var idem *session.Idempotency
		if key != nil {
			// A retry is answered before its If-Match is judged (the
			// first upload moved the state on).
			idem = &session.Idempotency{Key: key.key, Fingerprint: fingerprint("upload", []byte(id), data, []byte(r.Header.Get("If-Match")))}
			res, err := session.ReplayedState(r.Context(), sid, h.fileOptions(ns, id), idem)
			if aerr := keyError(err, id); aerr != nil {
				return aerr
			} else if err != nil {
				return storeError(err)
			}
			if res != nil {
				w.Header().Set(HeaderReplayed, "true")
				w.Header().Set("ETag", `"`+res.StateHash+`"`)
				writeJSON(w, http.StatusCreated, UploadResponse{Message: "state_uploaded", Size: res.StateSize, Hash: res.StateHash})
				return nil
			}
		}
		var cond store.Cond
		if m := r.Header.Get("If-Match"); m != "" {
			// Conditional upload: only over the state the client last saw.
			info, err := h.opts.Session.Store.Stat(r.Context(), sid)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return storeError(err)
			}
			if err != nil || !etagMatch(m, info.SHA256) {
				return &apiError{status: http.StatusPreconditionFailed, code: "precondition_failed", msg: "the stored state is not the one named by If-Match"}
			}
			cond.IfVersion = info.Version
		}
		info, res, aerr := h.putState(r.Context(), ns, id, sid, data, cond, idem)
		if aerr != nil {
			return aerr
		}
		if res != nil {
			info = store.Info{Size: res.StateSize, SHA256: res.StateHash}
			w.Header().Set(HeaderReplayed, "true")
		}
		count(h.metrics.uploads)
		h.metrics.state(info.Size)
		w.Header().Set("ETag", `"`+info.SHA256+`"`)
		writeJSON(w, http.StatusCreated, UploadResponse{Message: "state_uploaded", Size: info.Size, Hash: info.SHA256})
		return nil
	})
}

// putState stores data, an uploaded state of session id (store id sid)
// of namespace ns, under cond; with idem, as session.PutState does (the
// key stored in the state), and res replays a racing upload of the key
// that stored first.
func (h *Handler) putState(ctx context.Context, ns, id, sid string, data []byte, cond store.Cond, idem *session.Idempotency) (store.Info, *session.Result, *apiError) {
	info, res, err := session.PutState(ctx, sid, data, h.fileOptions(ns, id), cond, idem)
	switch {
	case err == nil:
		return info, res, nil
	case keyError(err, id) != nil:
		return info, nil, keyError(err, id)
	case errors.Is(err, session.ErrStateTooLarge):
		return info, nil, &apiError{status: statusTooLarge, code: codeStateTooLarge, msg: fmt.Sprintf(
			"the state with its %s is over the server's %s limit on a session's state; nothing was stored", HeaderIdempotencyKey, byteSize(h.opts.Session.MaxStateSize))}
	}
	return info, nil, storeError(err)
}

func (h *Handler) deleteState(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	_, sid, aerr := pathID(r, ns)
	if aerr != nil {
		return aerr
	}
	if err := h.opts.Session.Store.Delete(r.Context(), sid); err != nil {
		return storeError(err)
	}
	_ = h.keeper.Forget(sid) // its interpreter is of no more use (busy: the holder's call stores or conflicts)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) stateInfo(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	id, sid, aerr := pathID(r, ns)
	if aerr != nil {
		return aerr
	}
	info, err := h.opts.Session.Store.Stat(r.Context(), sid)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusOK, StateInfo{SessionID: id})
		return nil
	}
	if err != nil {
		return storeError(err)
	}
	out := StateInfo{Exists: true, SessionID: id, SizeBytes: info.Size, Hash: info.SHA256, Source: info.Source}
	out.CreatedAt = timePtr(info.Created)
	out.ModifiedAt = timePtr(info.Modified)
	out.ExpiresAt = timePtr(info.Expires)
	if info.Source != tiered.SourceArchive {
		// Reading an archived state would restore it to the hot tier.
		if in := h.inspect(r.Context(), ns, id, sid); in != nil {
			out.Decisions = in.Decisions
			if p := in.Paused; p != nil {
				out.Paused = &PausedInfo{RunID: runID(id, p.RunID), RunExpires: p.Expires.UTC().Format(time.RFC3339)}
				for _, c := range p.Calls {
					out.Paused.Calls = append(out.Paused.Calls, callInfo(c, h.opts.Functions))
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// inspect describes the blob of session id (store id sid) of namespace
// ns once its signature verifies; nil when it cannot be read.
func (h *Handler) inspect(ctx context.Context, ns, id, sid string) *session.Inspection {
	obj, err := h.opts.Session.Store.Get(ctx, sid)
	if err != nil {
		return nil
	}
	for _, key := range append([][]byte{h.stateKey(ns, id)}, h.legacyKeys()...) {
		if in, err := session.Inspect(obj.Data, key); err == nil {
			return in
		}
	}
	return nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// Codes of StateWarning.
const (
	// WarningStateCorrupt: the stored state could not be loaded and the
	// session started empty.
	WarningStateCorrupt = "state_corrupt"
	// WarningRestoredFromJSON: the interpreter dump could not be used and
	// the session was rebuilt from its JSON view.
	WarningRestoredFromJSON = "state_restored_from_json"
)

// codeStateCorrupt is the error code of stored state that cannot be
// loaded (500).
const codeStateCorrupt = "state_corrupt"

// StateWarning, in an execution's answer, says that the session did not
// continue from its stored state as it was.
type StateWarning struct {
	// Code is WarningStateCorrupt ("state_corrupt"): the stored state could
	// not be loaded (damaged, truncated, of another format, written for
	// another session or API key, signed with another key, or a file the
	// store cannot read), so it was kept aside and the session started
	// empty; or WarningRestoredFromJSON ("state_restored_from_json"): its
	// interpreter dump was written by another Monty version, so the
	// session was rebuilt from its JSON view and Lost lists what that
	// could not carry.
	Code string `json:"code"`
	// Message says what happened, why, and what became of the old state.
	Message string `json:"message"`
	// QuarantinedAs is the session id the old state was kept under (in the
	// same API key's namespace), for "state_corrupt".
	QuarantinedAs string `json:"quarantined_as,omitempty"`
	// Lost names the globals the JSON view could not carry, for
	// "state_restored_from_json".
	Lost []string `json:"lost,omitempty"`
}

// clientID is the client's name for a store id of this handler: the id
// without its namespace.
func clientID(sid string) string {
	if _, id, ok := strings.Cut(sid, "/"); ok {
		return id
	}
	return sid
}

// restoreWarning is the warning of an execution whose session (id of
// namespace ns) was opened as r says, nil when it continued from its
// stored state; it logs a record for each warning.
func (h *Handler) restoreWarning(ctx context.Context, ns, id string, r session.Restore) *StateWarning {
	switch {
	case r.QuarantinedAs != "":
		kept := clientID(r.QuarantinedAs)
		msg := fmt.Sprintf("the stored state of this session could not be loaded (%s), so the session started empty; the old state was kept aside as %q", session.CorruptReason(r.Err), kept)
		if checkSessionID(kept) == nil {
			msg += " (GET /state/" + kept + " downloads it)"
		}
		msg += " and the original is replaced when this session next stores state"
		h.log.LogAttrs(ctx, slog.LevelWarn, "stored session state could not be loaded; the session started empty",
			slog.String("session_id", id), slog.String("namespace", ns), slog.String("quarantined_as", r.QuarantinedAs), slog.String("reason", r.Reason))
		return &StateWarning{Code: WarningStateCorrupt, Message: msg, QuarantinedAs: kept}
	case r.FromJSON:
		h.log.LogAttrs(ctx, slog.LevelWarn, "session restored from its JSON view",
			slog.String("session_id", id), slog.String("namespace", ns), slog.String("reason", r.Reason), slog.Any("lost", r.Lost))
		msg := "the session was rebuilt from its JSON view (" + r.Reason + ")"
		if len(r.Lost) > 0 {
			msg += "; lost: " + strings.Join(r.Lost, ", ")
		}
		return &StateWarning{Code: WarningRestoredFromJSON, Message: msg, Lost: r.Lost}
	}
	return nil
}

// logNotSaved logs the state of a successful execution of session id (of
// namespace ns) that was not stored because it is over the state size cap
// (seed 004: "State size exceeds limit"): the execution succeeded, and the
// session's next execution continues from its previous state.
func (h *Handler) logNotSaved(ctx context.Context, ns, id string, res *session.Result) {
	if res == nil || res.NotSavedReason == "" || res.Err != nil || h.opts.Session.Ephemeral {
		return
	}
	h.log.LogAttrs(ctx, slog.LevelWarn, "state size exceeds limit; the state was not saved",
		slog.String("session_id", id), slog.String("namespace", ns), slog.Int64("max_state_size", h.opts.Session.MaxStateSize),
		slog.String("reason", res.NotSavedReason))
}

// corruptStateError is the answer to an execution whose session's stored
// state cannot be loaded, and was not started empty.
func corruptStateError(e *session.CorruptStateError) *apiError {
	reason := session.CorruptReason(e.Err)
	if e.KeepErr != nil {
		return &apiError{status: http.StatusInternalServerError, code: codeStateCorrupt, detail: e.Error(), msg: fmt.Sprintf(
			"the stored state of this session cannot be loaded (%s) and could not be kept aside, so it was left in place and nothing ran; DELETE /state/{id} removes it (the next execution then starts empty)", reason)}
	}
	return &apiError{status: http.StatusInternalServerError, code: codeStateCorrupt, detail: e.Error(), msg: fmt.Sprintf(
		"the stored state of this session cannot be loaded (%s); a copy was kept aside as %q and the original left in place, and nothing ran (this server fails such executions instead of starting the session empty); DELETE /state/{id} to start it empty, or upload a good copy with POST /state/{id}",
		reason, clientID(e.QuarantinedAs))}
}

// persistenceOff answers the requests that would store state when
// persistence is off.
func persistenceOff(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	return &apiError{status: http.StatusForbidden, code: "persistence_disabled",
		msg: "this server keeps no session state (persistence is off), so state and session files cannot be uploaded; every execution starts empty"}
}
