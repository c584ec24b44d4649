package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
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
		info, err := h.opts.Store.Stat(r.Context(), sid)
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
	done, aerr := h.begin()
	if aerr != nil {
		return aerr
	}
	defer done()
	obj, err := h.opts.Store.Get(r.Context(), sid)
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
	h.metrics.downloads.Add(1)
	return nil
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
	max := h.opts.MaxStateSize
	if r.ContentLength > max {
		h.metrics.largeUploads.Add(1)
		return tooLarge(codeStateTooLarge, "the state", r.ContentLength, max)
	}
	// The body is held in memory (up to MaxStateSize) and hashed: an upload
	// takes a slot like an execution, so that memory is bounded by the
	// slots. (Slow senders are bounded by the server's read timeout.)
	done, aerr := h.begin()
	if aerr != nil {
		return aerr
	}
	defer done()
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		h.metrics.largeUploads.Add(1)
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
		h.metrics.invalidUploads.Add(1)
		msg := err.Error()
		if strings.Contains(msg, "signature") {
			msg += "; a blob is accepted only by the session id (and API key) it was downloaded from"
		}
		return &apiError{status: http.StatusBadRequest, code: "invalid_state", msg: msg}
	}
	if mem := h.opts.Limits.MaxMemory; mem > 0 && in.DumpSize > mem {
		// It could never be loaded: refuse it now rather than at every /exec.
		h.metrics.largeUploads.Add(1)
		return &apiError{status: statusTooLarge, code: codeStateTooLarge, msg: fmt.Sprintf(
			"the state's interpreter dump is %s, more than the server's memory limit of %s per execution, so it could never be loaded; nothing was stored",
			byteSize(in.DumpSize), byteSize(mem))}
	}
	var cond store.Cond
	if m := r.Header.Get("If-Match"); m != "" {
		// Conditional upload: only over the state the client last saw.
		info, err := h.opts.Store.Stat(r.Context(), sid)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return storeError(err)
		}
		if err != nil || !etagMatch(m, info.SHA256) {
			return &apiError{status: http.StatusPreconditionFailed, code: "precondition_failed", msg: "the stored state is not the one named by If-Match"}
		}
		cond.IfVersion = info.Version
	}
	info, err := h.opts.Store.Put(r.Context(), sid, data, cond)
	if err != nil {
		return storeError(err)
	}
	h.metrics.uploads.Add(1)
	h.metrics.stateSize.observe(float64(info.Size))
	w.Header().Set("ETag", `"`+info.SHA256+`"`)
	writeJSON(w, http.StatusCreated, UploadResponse{Message: "state_uploaded", Size: info.Size, Hash: info.SHA256})
	return nil
}

func (h *Handler) deleteState(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	_, sid, aerr := pathID(r, ns)
	if aerr != nil {
		return aerr
	}
	if err := h.opts.Store.Delete(r.Context(), sid); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) stateInfo(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	id, sid, aerr := pathID(r, ns)
	if aerr != nil {
		return aerr
	}
	info, err := h.opts.Store.Stat(r.Context(), sid)
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
	writeJSON(w, http.StatusOK, out)
	return nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
