package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
)

// idempotencyKeyParam is the JSON schema of the tools' idempotency_key
// argument.
const idempotencyKeyParam = `"idempotency_key":{"type":"string","description":"Optional: a new unique key (such as a UUID) for this call; send the same key with the same arguments only to retry the call after its answer was lost, and the first answer comes back without running the code again"}`

// callKey is a tool call's idempotency key and the fingerprint of its
// arguments.
type callKey struct {
	tool, key, fingerprint string
}

// newCallKey is the key of a call of tool with args; nil when key is
// empty. Errors match ErrBadArgs.
func newCallKey(tool, key string, args json.RawMessage) (*callKey, error) {
	if key == "" {
		return nil, nil
	}
	if len(key) > session.MaxKeyLength {
		return nil, badArgs(tool, "idempotency_key is longer than %d bytes", session.MaxKeyLength)
	}
	// The arguments as a canonical JSON text (keys sorted), so that a
	// retry that encodes them differently is the same call.
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, badArgs(tool, "arguments: %v", err)
	}
	canonical, _ := json.Marshal(v)
	sum := sha256.Sum256(append([]byte("monty-go/agent-call\x00"+tool+"\x00"), canonical...))
	return &callKey{tool: tool, key: key, fingerprint: hex.EncodeToString(sum[:])}, nil
}

// keyedOp is a call (code, or a resume) on the session, made retry-safe
// with idem (nil: not).
type keyedOp func(ctx context.Context, s *session.Session, idem *session.Idempotency) (*session.Result, error)

// storedResult is what a retried call answers: the first call's Result
// as JSON, and whether it failed (Err does not travel).
type storedResult struct {
	Result  *Result `json:"result"`
	IsError bool    `json:"is_error,omitempty"`
}

// keyed is the session.Idempotency of a call with k (nil: none) in
// session named (store id id, with warning about its state), run under
// ctx (its recorder has the print output); the answer stored is the
// call's Result.
func (e *Executor) keyed(ctx context.Context, k *callKey, named, id, warning string) *session.Idempotency {
	if k == nil {
		return nil
	}
	rec, _ := ctx.Value(recorderKey{}).(*recorder) // the run's, which has its print output
	return &session.Idempotency{Key: k.key, Fingerprint: k.fingerprint, Answer: func(sres *session.Result) []byte {
		res := e.completed(sres, named, id, warning)
		if rec != nil {
			res.Output = rec.output()
			if e.calls {
				res.transcript = rec.transcript()
			}
		}
		res.Text = text(res)
		data, _ := json.Marshal(storedResult{Result: res, IsError: res.Err != nil})
		return data
	}}
}

// replayed is the Result a retried call answers: the first call's (rp),
// for the session of store id id; its events are those of run runID.
func replayed(rp *session.Replay, id, runID string) (*Result, error) {
	var stored storedResult
	if rp.Answer == nil || json.Unmarshal(rp.Answer, &stored) != nil || stored.Result == nil {
		res := &Result{StoreID: id, EventRunID: runID, Saved: rp.Saved, StateSize: rp.StateSize, StateHash: rp.StateHash,
			Text: "This call was done already (its idempotency_key was used " + rp.At.UTC().Format("2006-01-02 15:04:05 UTC") +
				"), and its answer was too large to keep; the session holds its effect."}
		return res, nil
	}
	res := stored.Result
	res.StoreID, res.EventRunID = id, runID
	res.Saved, res.StateSize, res.StateHash = rp.Saved, rp.StateSize, rp.StateHash
	if stored.IsError {
		res.Err = &runtime.Error{Type: res.ErrorType, Message: strings.TrimPrefix(lastLine(res.Error), res.ErrorType+": "), Text: res.Error}
	}
	return res, nil
}

// lastLine is the last line of a traceback text: the exception's own.
func lastLine(text string) string {
	text = strings.TrimRight(text, "\n")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		return text[i+1:]
	}
	return text
}
