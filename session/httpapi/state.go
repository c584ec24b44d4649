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
	obj, err := h.opts.Store.Get(r.Context(), sid)
	if err != nil {
		return storeError(err)
	}
	etag := `"` + obj.Info.SHA256 + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "private, no-cache")
	if etagMatch(r.Header.Get("If-None-Match"), obj.Info.SHA256) {
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
	_, sid, aerr := pathID(r, ns)
	if aerr != nil {
		return aerr
	}
	max := h.opts.MaxStateSize
	if r.ContentLength > max {
		return tooLarge("state_too_large", "the state", r.ContentLength, max)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return tooLarge("state_too_large", "the state", -1, max)
	}
	if err != nil {
		return &apiError{status: http.StatusBadRequest, code: "invalid_state", msg: "reading the body: " + err.Error()}
	}
	// Verify format, checksum and signature before storing: only blobs this
	// service (or one sharing its signing key) wrote may ever be loaded.
	if _, err := session.Inspect(data, h.opts.SigningKey); err != nil {
		h.metrics.invalidUploads.Add(1)
		return &apiError{status: http.StatusBadRequest, code: "invalid_state", msg: err.Error()}
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
