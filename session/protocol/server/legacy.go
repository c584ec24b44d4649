package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
)

// Sessions and records stored by releases before state format 7: at the
// record space's store id (recordPlace, for sessions too), as "MV1S", the
// HMAC-SHA256 of the server's signing key over a label, that store id and
// the payload, then the payload (a worker dump, protocol.Worker.Snapshot).
// They are read, never written: a legacy session is parked among the
// API key's sessions from then on, and its old entry removed.

// legacyMagic starts every legacy blob.
var legacyMagic = []byte("MV1S")

// isLegacy reports whether data is a legacy blob.
func isLegacy(data []byte) bool { return bytes.HasPrefix(data, legacyMagic) }

// errUnverified is a legacy blob that is not one this server (or one
// sharing its key) wrote for that id.
var errUnverified = errors.New("its signature does not verify (damaged, forged, written for another id or API key, or signed with another key)")

// openLegacy returns the payload of data, a legacy blob stored at storeID.
func (s *Server) openLegacy(storeID string, data []byte) ([]byte, error) {
	n := len(legacyMagic) + sha256.Size
	if len(data) < n || !isLegacy(data) {
		return nil, errUnverified
	}
	payload := data[n:]
	m := hmac.New(sha256.New, s.opts.SigningKey)
	m.Write([]byte("monty.v1 stored session\x00"))
	m.Write([]byte(storeID))
	m.Write([]byte{0})
	m.Write(payload)
	if !hmac.Equal(data[len(legacyMagic):n], m.Sum(nil)) {
		return nil, errUnverified
	}
	return payload, nil
}
