package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
)

// FileList is the body of GET /state/{id}/files.
type FileList struct {
	SessionID string `json:"session_id"`
	// Files are the session's files under /work (not its directories),
	// sorted by path.
	Files []session.FileInfo `json:"files"`
	// TotalBytes is the sum of the files' sizes.
	TotalBytes int64 `json:"total_bytes"`
	// MaxBytes is the session's limit on its files (contents plus the
	// length of every path).
	MaxBytes int64 `json:"max_bytes"`
}

// FileResponse is the body of a 200 or 201 answer to PUT
// /state/{id}/files/{path}.
type FileResponse struct {
	// Path is the file's path under /work.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Created is true when the file is new (201), false when it replaced
	// one (200).
	Created bool `json:"created"`
	// StateSize and StateHash describe the stored state after the write
	// (StateHash is the ETag of GET /state/{id}).
	StateSize int64  `json:"state_size"`
	StateHash string `json:"state_hash"`
}

// files is the /work of the sessions this handler runs, nil when files are
// turned off.
func (h *Handler) files() *session.Files {
	if h.opts.MaxFileBytes < 0 {
		return nil
	}
	return &session.Files{MaxBytes: h.opts.MaxFileBytes}
}

// maxFileBytes is the effective limit on a session's files.
func (h *Handler) maxFileBytes() int64 { return min(h.opts.MaxFileBytes, h.opts.Session.MaxStateSize) }

// fileOptions are the session options of the file endpoints for session
// id of namespace ns.
func (h *Handler) fileOptions(ns, id string) session.Options {
	return session.Options{
		Store: h.opts.Session.Store, Engine: h.opts.Session.Engine,
		SigningKey: h.stateKey(ns, id), VerifyKeys: h.legacyKeys(),
		MaxStateSize: h.opts.Session.MaxStateSize, Files: h.files(), Telemetry: h.opts.Session.Telemetry,
	}
}

// fileRequest checks what every file endpoint needs: files turned on, a
// valid session id, and a file path when file is true. It returns the
// session id and its store id.
func (h *Handler) fileRequest(r *http.Request, ns string, file bool) (id, sid string, aerr *apiError) {
	if h.files() == nil {
		return "", "", &apiError{status: http.StatusNotFound, code: "files_disabled", msg: "session files are turned off on this server (MaxFileBytes < 0)"}
	}
	if id, sid, aerr = pathID(r, ns); aerr != nil {
		return "", "", aerr
	}
	if file && r.PathValue("path") == "" {
		return "", "", &apiError{status: http.StatusBadRequest, code: "invalid_path", msg: "no file path: use /state/{id}/files/{path}, the path relative to /work (GET /state/{id}/files lists them)"}
	}
	return id, sid, nil
}

// fileError maps a failure of a file operation on session id (of
// namespace ns) to a response.
func fileError(err error, ns, id string) *apiError {
	var aerr *apiError
	switch msg := err.Error(); {
	case errors.Is(err, fs.ErrInvalid):
		aerr = &apiError{status: http.StatusBadRequest, code: codeInvalidPath, msg: msg}
	case errors.Is(err, fs.ErrNotExist):
		aerr = &apiError{status: http.StatusNotFound, code: "file_not_found", msg: msg + "; GET /state/{id}/files lists the session's files"}
	case errors.Is(err, vfs.ErrNoSpace):
		aerr = &apiError{status: statusTooLarge, code: "files_too_large", msg: msg}
	case errors.Is(err, session.ErrStateTooLarge):
		aerr = &apiError{status: statusTooLarge, code: codeStateTooLarge, msg: msg}
	default:
		aerr = storeError(err)
	}
	return aerr.named(ns, id)
}

// listFiles serves GET /state/{id}/files.
func (h *Handler) listFiles(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	id, sid, aerr := h.fileRequest(r, ns, false)
	if aerr != nil {
		return aerr
	}
	// Reading the files holds the state blob in memory: a slot, as a
	// state download takes.
	return h.withSlot(func() *apiError {
		files, err := session.ListFiles(r.Context(), sid, h.fileOptions(ns, id))
		if err != nil {
			return fileError(err, ns, id)
		}
		out := FileList{SessionID: id, Files: files, MaxBytes: h.maxFileBytes()}
		for _, f := range files {
			out.TotalBytes += f.Size
		}
		w.Header().Set("Cache-Control", "private, no-cache")
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

// getFile serves GET /state/{id}/files/{path}: the file's bytes.
func (h *Handler) getFile(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	id, sid, aerr := h.fileRequest(r, ns, true)
	if aerr != nil {
		return aerr
	}
	return h.withSlot(func() *apiError {
		data, err := session.ReadFile(r.Context(), sid, r.PathValue("path"), h.fileOptions(ns, id))
		if err != nil {
			return fileError(err, ns, id)
		}
		sum := sha256.Sum256(data)
		etag := hex.EncodeToString(sum[:])
		hdr := w.Header()
		hdr.Set("Cache-Control", "private, no-cache")
		hdr.Set("ETag", `"`+etag+`"`)
		if etagMatch(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
		// The bytes are the code's: never to be rendered by a browser.
		hdr.Set("Content-Type", "application/octet-stream")
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(r.PathValue("path"))}))
		hdr.Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(data)
		}
		count(h.metrics.fileDownloads)
		return nil
	})
}

// putFile serves PUT /state/{id}/files/{path}: the body becomes the file.
func (h *Handler) putFile(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	id, sid, aerr := h.fileRequest(r, ns, true)
	if aerr != nil {
		return aerr
	}
	max := h.maxFileBytes()
	if r.ContentLength > max {
		return &apiError{status: statusTooLarge, code: "files_too_large", msg: fmt.Sprintf("the file is %s, over the limit of %s on a session's files", byteSize(r.ContentLength), byteSize(max))}
	}
	// The body and the state blob are held in memory: a slot, as a state
	// upload takes.
	return h.withSlot(func() *apiError {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{status: statusTooLarge, code: "files_too_large", msg: fmt.Sprintf("the file is over the limit of %s on a session's files", byteSize(max))}
		}
		if err != nil {
			return &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: "reading the body: " + err.Error()}
		}
		up, err := session.WriteFile(r.Context(), sid, r.PathValue("path"), data, h.fileOptions(ns, id))
		if err != nil {
			return fileError(err, ns, id)
		}
		count(h.metrics.fileUploads)
		h.metrics.state(up.State.Size)
		status := http.StatusOK
		if up.Created {
			status = http.StatusCreated
		}
		rel := strings.TrimPrefix(r.PathValue("path"), session.FilesMount+"/")
		writeJSON(w, status, FileResponse{Path: rel, Size: int64(len(data)), Created: up.Created, StateSize: up.State.Size, StateHash: up.State.SHA256})
		return nil
	})
}

// deleteFile serves DELETE /state/{id}/files/{path}.
func (h *Handler) deleteFile(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	id, sid, aerr := h.fileRequest(r, ns, true)
	if aerr != nil {
		return aerr
	}
	return h.withSlot(func() *apiError {
		up, err := session.RemoveFile(r.Context(), sid, r.PathValue("path"), h.fileOptions(ns, id))
		if err != nil {
			return fileError(err, ns, id)
		}
		h.metrics.state(up.State.Size)
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}
