package httpapi

import "github.com/monty-go/monty/session/apikey"

// stateKey is the key the state blobs of session id in namespace ns are
// signed and verified with (apikey.StateKey of Options.Session.SigningKey): a blob
// verifies only for the session (and API key) it was written for.
func (h *Handler) stateKey(ns, id string) []byte {
	return apikey.StateKey(h.opts.Session.SigningKey, ns, id)
}

// legacyKeys are the further keys accepted when loading a stored blob
// (apikey.LegacyKeys: the plain SigningKey, which signed every blob before
// keys were bound to sessions). Uploads never accept them.
func (h *Handler) legacyKeys() [][]byte { return apikey.LegacyKeys(h.opts.Session.SigningKey) }
