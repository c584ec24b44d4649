package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/session"
)

// CheckRequest is the body of POST /check.
type CheckRequest struct {
	// Code is the Python source to check.
	Code string `json:"code"`
	// SessionID, when set, checks the code against that session's earlier
	// calls (its functions, classes, variables and imports), as "type_check"
	// on POST /exec would; the session's state is not changed.
	SessionID string `json:"session_id,omitempty"`
	// Stubs is stub (.pyi) text declaring names the code may use.
	Stubs string `json:"stubs,omitempty"`
	// Format chooses how Text renders the diagnostics: "full" (default),
	// "concise", "json", "jsonlines", "rdjson", "pylint", "gitlab",
	// "github" or "azure".
	Format string `json:"format,omitempty"`
	// Limits ask for tighter limits than the server's (duration and
	// memory apply to a check).
	Limits *RequestLimits `json:"limits,omitempty"`
}

// CheckResponse is the body of a 200 answer to POST /check.
type CheckResponse struct {
	// Clean is true when the check found nothing.
	Clean bool `json:"clean"`
	// Diagnostics are the problems found, in source order.
	Diagnostics []typecheck.Diagnostic `json:"diagnostics"`
	// Text is the diagnostics rendered in the requested format ("" when
	// clean).
	Text       string  `json:"text"`
	DurationMS float64 `json:"duration_ms"`
}

// check serves POST /check.
func (h *Handler) check(w http.ResponseWriter, r *http.Request, ns string) *apiError {
	var req CheckRequest
	if aerr := h.readBody(w, r, &req); aerr != nil {
		return aerr
	}
	if strings.TrimSpace(req.Code) == "" {
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: "\"code\" is required"}
	}
	format, err := typecheck.ParseFormat(req.Format)
	if req.Format == "" {
		format, err = typecheck.Full, nil
	}
	if err != nil {
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: "format: " + err.Error()}
	}
	if req.SessionID != "" {
		if aerr := checkSessionID(req.SessionID); aerr != nil {
			return aerr
		}
	}
	if l := req.Limits; l != nil && (l.DurationMS < 0 || l.MemoryBytes < 0) {
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: "limits must not be negative"}
	}
	limits := h.limits(req.Limits)
	return h.withRunSlot(r, func(ctx context.Context) *apiError {
		start := time.Now()
		tc, aerr := h.typeCheck(ctx, req.Stubs)
		if aerr != nil {
			return aerr
		}
		tc.Format = format
		var res *typecheck.Result
		if req.SessionID == "" {
			done := h.opts.Session.Telemetry.StartTypeCheck(ctx)
			res, err = tc.Checker.Check(ctx, typecheck.Request{Code: req.Code, Stubs: tc.Stubs, Format: format, Limits: limits})
			problems := 0
			if res != nil {
				problems = len(res.Diagnostics)
			}
			done(problems, err)
		} else {
			res, err = h.checkInSession(ctx, ns, req.SessionID, req.Code, *tc, limits)
		}
		if err != nil {
			// The session's own wording (loading it) names it by its store id.
			if kind := runtime.LimitOf(err); kind != runtime.NoLimit {
				return (&apiError{status: statusLimit, code: kind.String(), msg: limitMessage(kind, errText(err), limits, h.opts.Session.Limits)}).named(ns, req.SessionID)
			}
			return checkerError(err).named(ns, req.SessionID)
		}
		diags := res.Diagnostics
		if diags == nil {
			diags = []typecheck.Diagnostic{}
		}
		h.metrics.check(map[bool]string{true: "clean", false: "problems"}[res.Clean()])
		writeJSON(w, http.StatusOK, &CheckResponse{Clean: res.Clean(), Diagnostics: diags, Text: res.Text, DurationMS: durationMS(time.Since(start))})
		return nil
	})
}

// checkInSession checks code against a stored session without changing it.
func (h *Handler) checkInSession(ctx context.Context, ns, id, code string, tc session.TypeCheck, limits runtime.Limits) (*typecheck.Result, error) {
	s, err := session.Open(ctx, storeID(ns, id), session.Options{
		Store: h.opts.Session.Store, Engine: h.opts.Session.Engine, Pool: h.warmPool(ctx),
		SigningKey: h.stateKey(ns, id), VerifyKeys: h.legacyKeys(),
		MaxStateSize: h.opts.Session.MaxStateSize, Limits: limits, Telemetry: h.opts.Session.Telemetry,
	})
	if err != nil {
		return nil, err
	}
	defer s.Close(context.WithoutCancel(ctx))
	return s.Check(ctx, code, tc)
}

// typeCheck is the type checking of a request: the server's checker
// (compiled at the first request that asks) and stubs plus the request's.
func (h *Handler) typeCheck(ctx context.Context, stubs string) (*session.TypeCheck, *apiError) {
	checker := h.opts.Checker
	if checker == nil {
		var err error
		if checker, err = typecheck.Default(ctx); err != nil {
			return nil, checkerError(err)
		}
	}
	if h.opts.Stubs != "" {
		stubs = h.opts.Stubs + "\n" + stubs
	}
	return &session.TypeCheck{Checker: checker, Stubs: stubs}, nil
}

// typeCheckError is the 422 answer for code a check refused, nil for any
// other error.
func typeCheckError(err error) *apiError {
	var tcErr *typecheck.Error
	if !errors.As(err, &tcErr) {
		return nil
	}
	return &apiError{status: statusLimit, code: "type_check_failed", msg: tcErr.Error(),
		body: &ErrorResponse{Diagnostics: tcErr.Result.Diagnostics}}
}

// checkerError is the answer for a check that could not run.
func checkerError(err error) *apiError {
	switch {
	case errors.Is(err, runtime.ErrInvalidOption):
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: err.Error()}
	case errors.Is(err, typecheck.ErrCheckerFailed):
		return &apiError{status: http.StatusInternalServerError, code: "type_checker_failed", msg: err.Error()}
	case errors.Is(err, typecheck.ErrNoModule):
		return checkerUnavailable(err)
	}
	return storeError(err)
}

// checkerUnavailable is the answer of a server whose program links no
// type checker (typecheck.ErrNoModule).
func checkerUnavailable(err error) *apiError {
	return &apiError{status: http.StatusNotImplemented, code: "type_check_unavailable",
		msg: "this server cannot type-check: " + err.Error()}
}

// readBody decodes a JSON request body of at most MaxBody bytes into v.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	if r.ContentLength > h.opts.MaxBody {
		return tooLarge("request_too_large", "request body", r.ContentLength, h.opts.MaxBody)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return tooLarge("request_too_large", "request body", -1, h.opts.MaxBody)
	}
	if err != nil {
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: "reading the body: " + err.Error()}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", msg: "the body must be a JSON object like {\"code\": \"print(1)\"}: " + err.Error()}
	}
	return nil
}
