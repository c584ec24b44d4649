package apikey

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
)

// The layout of a namespace's sessions in the store, as the HTTP API keeps
// them: session id of namespace ns is stored at StoreID(ns, id), and its
// state blobs are signed with StateKey(signingKey, ns, id). Another
// surface that stores sessions this way (monty mcp --api-key, through
// ThreadSessionID) shares them with the API: the same key sees, resumes
// and continues them there.

// ErrBadSessionID matches the errors of ThreadSessionID: the thread key or
// session_id does not make a session id of the API.
var ErrBadSessionID = errors.New("apikey: not a valid session id")

// MaxSessionID is the longest session id, in bytes.
const MaxSessionID = 128

// ValidSessionID reports whether id is a session id of the API: 1 to
// MaxSessionID letters, digits, '_', '-' or '.', not starting with '.'.
func ValidSessionID(id string) bool {
	if len(id) == 0 || len(id) > MaxSessionID || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// NamespaceOf is the namespace of key when key is configured (see
// Set.Namespace): "k" and 24 hex digits of its SHA-256.
func NamespaceOf(key string) string { return namespaceOf(sha256.Sum256([]byte(key))) }

// StoreID is where session id of namespace ns lives in the store:
// "<ns>/<id>".
func StoreID(ns, id string) string { return ns + "/" + id }

// stateKeyLabel starts the input of every session's signing key, so that
// the derived keys can never collide with an HMAC computed with the
// signing key for another purpose.
const stateKeyLabel = "monty-go/state/v1\x00"

// StateKey is the key the state blobs of session id in namespace ns are
// signed and verified with: HMAC-SHA256(signingKey, label ‖ ns ‖ 0 ‖ id).
// A blob therefore verifies only for the session (and API key) it was
// written for: a blob leaked from one key cannot be uploaded under
// another, nor one session's blob under another session's id. Session ids
// and namespaces contain no NUL byte, so (ns, id) pairs map to distinct
// inputs.
func StateKey(signingKey []byte, ns, id string) []byte {
	mac := hmac.New(sha256.New, signingKey)
	mac.Write([]byte(stateKeyLabel))
	mac.Write([]byte(ns))
	mac.Write([]byte{0})
	mac.Write([]byte(id))
	return mac.Sum(nil)
}

// LegacyKeys are the further keys accepted when loading a stored blob of
// any session: the plain signingKey, which signed every blob before keys
// were bound to sessions. Such a blob is signed with the session's
// StateKey when next saved. Uploads never accept them (a leaked blob of
// that era could otherwise be moved to another key or session).
func LegacyKeys(signingKey []byte) [][]byte { return [][]byte{signingKey} }

// StoreKeys are the keys of the session stored at storeID ("<ns>/<id>",
// see StoreID): the key its blobs are signed with, StateKey, and the
// further keys accepted when loading them, LegacyKeys. It fits
// session.ManagerOptions.Keys, so that a Manager signs sessions as the
// API does. A storeID without '/' is taken as a namespace with an empty
// session id (no session of the API is stored so).
func StoreKeys(signingKey []byte, storeID string) (sign []byte, verify [][]byte) {
	ns, id, _ := strings.Cut(storeID, "/")
	return StateKey(signingKey, ns, id), LegacyKeys(signingKey)
}

// ThreadSessionID is the session id of the API that an agent thread's
// session is kept as (see agent.ExecutorOptions.StoreID): the thread key
// itself for the thread's session, and "<thread>.<sessionID>" for a
// session it names. The thread key may not contain '.', so that the
// mapping is one to one: the id splits at its first '.' into the thread
// and the session_id. The result must be a valid session id
// (ValidSessionID); errors match ErrBadSessionID and say what to change.
func ThreadSessionID(threadKey, sessionID string) (string, error) {
	switch {
	case threadKey == "":
		return "", fmt.Errorf("%w: the thread key is empty (sessions in an API namespace belong to a thread)", ErrBadSessionID)
	case !ValidSessionID(threadKey) || strings.Contains(threadKey, "."):
		return "", fmt.Errorf("%w: thread key %q: in an API namespace use 1-%d letters, digits, '_' or '-'", ErrBadSessionID, threadKey, MaxSessionID)
	case sessionID == "":
		return threadKey, nil
	}
	id := threadKey + "." + sessionID
	if !ValidSessionID(id) {
		return "", fmt.Errorf("%w: session_id %q: in an API namespace use letters, digits, '_', '-' or '.', at most %d of them with thread key %q",
			ErrBadSessionID, sessionID, MaxSessionID-len(threadKey)-1, threadKey)
	}
	return id, nil
}
