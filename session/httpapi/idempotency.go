package httpapi

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/monty-go/monty/session"
)

// Retry-safe requests (docs/http.md, "Retrying safely"), after the IETF
// HTTP Idempotency-Key draft: a POST /exec, POST /runs/{run_id}/resume or
// POST /state/{id} with an Idempotency-Key header stores the key, a
// fingerprint of the request and its answer with the session's state, in
// the compare-and-set that stores the request's effect
// (session.Idempotency). A retry with the key, on any instance, gets that
// answer again with the header Idempotent-Replayed: true, and nothing
// runs.
const (
	// HeaderIdempotencyKey is the request header that makes a request
	// retry-safe.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderReplayed is set ("true") on an answer replayed for a retry.
	HeaderReplayed = "Idempotent-Replayed"
)

// keyedRequest is the idempotency key of a request and its fingerprint.
type keyedRequest struct {
	key, fingerprint string
}

// idempotencyKey reads the request's Idempotency-Key header: nil when
// there is none. The draft makes it a structured-field string ("..."); a
// bare token is taken as it is, as most clients send it.
func idempotencyKey(r *http.Request) (*keyedRequest, *apiError) {
	values := r.Header.Values(HeaderIdempotencyKey)
	if len(values) == 0 {
		return nil, nil
	}
	bad := func(why string) *apiError {
		return badRequestCode("invalid_idempotency_key", fmt.Sprintf("the %s header %s; send one key of 1 to %d printable ASCII characters, such as a UUID, the same on every retry of a request and new for each new request",
			HeaderIdempotencyKey, why, session.MaxKeyLength))
	}
	if len(values) > 1 {
		return nil, bad("is given more than once")
	}
	key := strings.TrimSpace(values[0])
	if len(key) >= 2 && key[0] == '"' {
		unquoted, err := strconv.Unquote(key)
		if err != nil || strings.ContainsAny(key, "\t") {
			return nil, bad("is not a valid quoted string")
		}
		key = unquoted
	}
	if key == "" || len(key) > session.MaxKeyLength {
		return nil, bad("is empty or too long")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return nil, bad("holds a character that is not printable ASCII")
		}
	}
	return &keyedRequest{key: key}, nil
}

// requestKey is idempotencyKey on a server that can keep keys: one that
// stores sessions.
func (h *Handler) requestKey(r *http.Request) (*keyedRequest, *apiError) {
	k, aerr := idempotencyKey(r)
	if k != nil && h.opts.Session.Ephemeral {
		return nil, badRequestCode("idempotency_unavailable", fmt.Sprintf(
			"this server stores no sessions (ephemeral), so it cannot keep an %s for a retry; send the request without it", HeaderIdempotencyKey))
	}
	return k, aerr
}

// badRequestCode is a 400 answer with its own error code.
func badRequestCode(code, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, msg: msg}
}

// fingerprint is the hex SHA-256 of what a request asks for: its kind
// ("exec", "resume", "upload"), then each part with its length.
func fingerprint(kind string, parts ...[]byte) string {
	h := sha256.New()
	h.Write([]byte("monty-go/idempotency\x00" + kind))
	for _, p := range parts {
		_ = binary.Write(h, binary.BigEndian, uint64(len(p)))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keyedSessionID is the session of a POST /exec with an idempotency key
// and no session_id: named after the key (in the API key's namespace, as
// every session), so that a retry finds the first request's session.
func keyedSessionID(key string) string {
	sum := sha256.Sum256([]byte("monty-go/idempotency-session\x00" + key))
	return "k-" + hex.EncodeToString(sum[:16])
}

// storedAnswer is the answer a retry gets (session.Idempotency.Answer):
// its status and JSON body.
type storedAnswer struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// holdKey marks the key of a request on session id of namespace ns as in
// flight on this instance until the function it returns is called; a
// second request with the key meanwhile is answered 409
// idempotency_key_in_flight, with Retry-After.
func (h *Handler) holdKey(ns, id string, k *keyedRequest) (func(), *apiError) {
	if k == nil {
		return func() {}, nil
	}
	name := ns + "\x00" + id + "\x00" + k.key
	if _, busy := h.keysInFlight.LoadOrStore(name, struct{}{}); busy {
		return nil, &apiError{status: http.StatusConflict, code: "idempotency_key_in_flight", retryAfter: 1, msg: fmt.Sprintf(
			"a request with this %s is still running on session %q; retry after Retry-After to get its answer", HeaderIdempotencyKey, id)}
	}
	return func() { h.keysInFlight.Delete(name) }, nil
}

// keyError is the answer to a request whose key another request of the
// session used (session.ErrKeyReused), or nil for other errors.
func keyError(err error, sessionID string) *apiError {
	var reused *session.KeyReusedError
	if !errors.As(err, &reused) {
		return nil
	}
	return &apiError{status: http.StatusUnprocessableEntity, code: "idempotency_key_reused", msg: fmt.Sprintf(
		"the %s %q was used at %s for another request of session %q; nothing was done: use a new key for a new request, and the same key only to retry the same request",
		HeaderIdempotencyKey, reused.Key, reused.At.UTC().Format(time.RFC3339), sessionID)}
}

// replay is the answer stored for a retried request of session sessionID:
// the first request's status and body, the body's state fields those of
// the state it stored. A stored 200 body is an *ExecResponse; anything
// else comes back as an *apiError.
func replay(rp *session.Replay, sessionID string) (*ExecResponse, *apiError) {
	var stored storedAnswer
	if rp.Answer == nil || json.Unmarshal(rp.Answer, &stored) != nil || stored.Status == 0 {
		return nil, &apiError{status: http.StatusConflict, code: "idempotency_answer_not_kept", msg: fmt.Sprintf(
			"the request with this %s was done at %s, but its answer (%d bytes) was too large to keep for retries; its effect is in session %q (GET /state/%s/info)",
			HeaderIdempotencyKey, rp.At.UTC().Format(time.RFC3339), rp.AnswerSize, sessionID, sessionID)}
	}
	if stored.Status == http.StatusOK {
		var resp ExecResponse
		if err := json.Unmarshal(stored.Body, &resp); err != nil {
			return nil, &apiError{status: http.StatusInternalServerError, code: "internal", msg: "the stored answer does not decode"}
		}
		resp.HasState, resp.StateSize, resp.StateHash, resp.StateSaved = rp.HasState, rp.StateSize, rp.StateHash, rp.Saved
		return &resp, nil
	}
	var body ErrorResponse
	if err := json.Unmarshal(stored.Body, &body); err != nil {
		return nil, &apiError{status: http.StatusInternalServerError, code: "internal", msg: "the stored answer does not decode"}
	}
	body.HasState, body.StateSize, body.StateHash = rp.HasState, rp.StateSize, rp.StateHash
	return nil, &apiError{status: stored.Status, code: body.Error, msg: body.Message, body: &body}
}
