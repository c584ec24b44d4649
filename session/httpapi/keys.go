package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
)

// stateKeyLabel starts the input of every session's signing key, so that
// the derived keys can never collide with an HMAC the server computes for
// another purpose.
const stateKeyLabel = "monty-go/state/v1\x00"

// stateKey is the key the state blobs of session id in namespace ns are
// signed and verified with: HMAC-SHA256(SigningKey, label ‖ ns ‖ 0 ‖ id).
// A blob therefore verifies only for the session (and API key) it was
// written for: a blob leaked from one key cannot be uploaded under
// another, nor one session's blob under another session's id. Session ids
// and namespaces contain no NUL byte, so (ns, id) pairs map to distinct
// inputs.
func (h *Handler) stateKey(ns, id string) []byte {
	mac := hmac.New(sha256.New, h.opts.SigningKey)
	mac.Write([]byte(stateKeyLabel))
	mac.Write([]byte(ns))
	mac.Write([]byte{0})
	mac.Write([]byte(id))
	return mac.Sum(nil)
}

// legacyKeys are the further keys accepted when loading a stored blob: the
// plain SigningKey, which signed every blob before keys were bound to
// sessions. Such a blob is signed with the session's key when next saved.
// Uploads never accept them (a leaked blob of that era could otherwise be
// moved to another key or session).
func (h *Handler) legacyKeys() [][]byte { return [][]byte{h.opts.SigningKey} }
