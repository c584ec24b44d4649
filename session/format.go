package session

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
)

// The stored blob (docs/state-format.md):
//
//	magic "MGOS" | version 1 | flags | monty version (u8 len + text)
//	| module sha256 (32) | names (u32 len + JSON array of public global names)
//	| json view (u32 len + JSON object) | dump (u32 len + runtime dump, maybe compressed)
//	[version 2: | type check context (u32 len + JSON object)]
//	[version 3: | type check context (u32 len, 0 when none) | files (u32 len + files section)]
//	[version 4: as 3 (files may be empty) | paused run (u32 len + JSON object)]
//	[version 5: as 4 (no paused run), the dump in parts (parts.go)]
//	[version 6: as 4 or 5 (flag bit 3: the dump in parts) | decisions (u32 len + JSON array)]
//	[version 7: as 6 (decisions may be empty) | driver (u32 len + JSON object)]
//	[version 8: as 7 (driver may be empty) | idempotency keys (u32 len + JSON array)]
//	| sha256 of everything before (32) | hmac-sha256 of everything before (32, if signed)
//
// Version 2 is written only for sessions that record a type check context,
// version 3 only for sessions with files and version 4 only while a run is
// paused at client tool calls, so state without them stays readable by
// builds that read the earlier versions only. Version 5 is written for an
// idle session with a dump: the dump in parts, so that a save stores what
// the call added. Version 6 is written only for a session that keeps
// decisions on approval calls (Session.Decisions). Version 7 is written
// only for a session another surface drives (a Driven: the monty.v1
// server's), which keeps that surface's own state beside the dump.
// Version 8 is written only for a session that keeps idempotency keys
// (Idempotency).
const (
	blobMagic        = "MGOS"
	blobVersion      = 1
	blobVersionTC    = 2
	blobVersionFiles = 3
	blobVersionRun   = 4
	blobVersionParts = 5
	blobVersionAudit = 6
	blobVersionDrive = 7
	blobVersionKeys  = 8
	blobVersionMax   = blobVersionKeys

	flagSigned     = 1 << 0
	flagCompressed = 1 << 1
	flagJSONOnly   = 1 << 2
	// flagParts (versions 6 and 7): the dump section holds the dump in parts.
	flagParts = 1 << 3
)

// ErrCorrupt matches errors from blobs that are damaged, truncated, of a
// foreign format, or whose signature does not verify.
var ErrCorrupt = errors.New("session: state blob is corrupt or not trusted")

// ErrNewerFormat matches errors from blobs a newer build wrote (a format
// version above this build's, by less than 16): the state is left stored
// as it is, for a build that reads it.
var ErrNewerFormat = errors.New("session: state written by a newer build; update this one to load it")

// blob is the decoded form of a stored session.
type blob struct {
	MontyVersion string
	ModuleSum    [32]byte
	Names        []string        // public global names when saved
	namesJSON    []byte          // Names as JSON, when the view has it already
	JSON         json.RawMessage // JSON view: {"name": value, ...}
	Dump         []byte          // runtime REPL dump; nil when in Parts
	// Parts is the dump in parts (format version 5); nil when the dump is
	// whole (Dump) or there is none.
	Parts    *dumpParts
	JSONOnly bool
	// TypeCheck is what the session's earlier calls defined, for type
	// checking the next one (nil: the session does not record it).
	TypeCheck *typecheck.Context
	// Files is the files section (files.go), nil when the session has no
	// files.
	Files []byte
	// Run is the run paused at client tool calls; its execution is in
	// Dump. Nil when no run is paused.
	Run *pausedRun
	// Decisions are the last MaxDecisions decisions on approval calls
	// (format version 6); nil when none.
	Decisions []Decision
	// Driver is what the surface driving the session keeps (format version
	// 7); nil for a session no other surface drove.
	Driver *Driver
	// Keys are the idempotency keys of the session's last calls (format
	// version 8), oldest first; nil when none.
	Keys       []keyRecord
	compressed bool // Dump is zstd-compressed (parseBlob, or a copy of its blob)
	// oldKey: it verified with another key than the signing key (a
	// verify key, or a legacy one), so the next save signs it again.
	oldKey bool
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// encode writes the blob, compressing the dump (unless it is compressed
// already) and signing when key is set.
func (b *blob) encode(key []byte, compress bool) ([]byte, error) {
	var err error
	names := b.namesJSON
	if names == nil {
		if names, err = json.Marshal(b.Names); err != nil {
			return nil, err
		}
	}
	dump := b.Dump
	flags := byte(0)
	switch {
	case b.compressed:
		flags |= flagCompressed
	case compress && len(dump) > 0:
		dump = compressDump(dump)
		flags |= flagCompressed
	}
	if b.JSONOnly {
		flags |= flagJSONOnly
	}
	if key != nil {
		flags |= flagSigned
	}
	parts := [][]byte{names, b.JSON, dump}
	version := byte(blobVersion)
	var tc []byte
	if b.TypeCheck != nil {
		if tc, err = json.Marshal(b.TypeCheck); err != nil {
			return nil, err
		}
	}
	switch {
	case b.Parts != nil:
		if b.Run != nil {
			return nil, errors.New("session: a paused run is stored with its whole dump")
		}
		parts, version = [][]byte{names, b.JSON, b.Parts.encode(), tc, b.Files, nil}, blobVersionParts
		flags &^= flagCompressed // each part says how it is stored
	case b.Run != nil:
		run, err := json.Marshal(b.Run)
		if err != nil {
			return nil, err
		}
		parts, version = append(parts, tc, b.Files, run), blobVersionRun
	case len(b.Files) > 0:
		parts, version = append(parts, tc, b.Files), blobVersionFiles
	case tc != nil:
		parts, version = append(parts, tc), blobVersionTC
	}
	if len(b.Decisions) > 0 || b.Driver != nil || len(b.Keys) > 0 {
		if parts, flags, err = b.withDecisions(parts, tc, flags); err != nil {
			return nil, err
		}
		version = blobVersionAudit
	}
	if b.Driver != nil || len(b.Keys) > 0 {
		var drv []byte
		if b.Driver != nil {
			if drv, err = json.Marshal(b.Driver); err != nil {
				return nil, err
			}
		}
		parts, version = append(parts, drv), blobVersionDrive
	}
	if len(b.Keys) > 0 {
		keys, err := encodeKeys(b.Keys, compress)
		if err != nil {
			return nil, err
		}
		parts, version = append(parts, keys), blobVersionKeys
	}
	var out bytes.Buffer
	out.Grow(64 + len(names) + len(b.JSON) + len(dump) + len(tc) + len(b.Files) + 64)
	out.WriteString(blobMagic)
	out.WriteByte(version)
	out.WriteByte(flags)
	out.WriteByte(byte(len(b.MontyVersion)))
	out.WriteString(b.MontyVersion)
	out.Write(b.ModuleSum[:])
	for _, part := range parts {
		_ = binary.Write(&out, binary.BigEndian, uint32(len(part)))
		out.Write(part)
	}
	sum := sha256.Sum256(out.Bytes())
	out.Write(sum[:])
	if key != nil {
		mac := hmac.New(sha256.New, key)
		mac.Write(out.Bytes())
		out.Write(mac.Sum(nil))
	}
	return out.Bytes(), nil
}

// withDecisions are the sections of version 6: those of version 4 or 5
// (the dump as parts already holds it), then the decisions (an empty
// section when there are none, which only version 7 writes).
func (b *blob) withDecisions(parts [][]byte, tc []byte, flags byte) ([][]byte, byte, error) {
	var decisions []byte
	var err error
	if len(b.Decisions) > 0 {
		if decisions, err = json.Marshal(b.Decisions); err != nil {
			return nil, 0, err
		}
	}
	var run []byte
	if b.Run != nil {
		if run, err = json.Marshal(b.Run); err != nil {
			return nil, 0, err
		}
	}
	if b.Parts != nil {
		flags |= flagParts
	}
	return [][]byte{parts[0], parts[1], parts[2], tc, b.Files, run, decisions}, flags, nil
}

// decodeBlob checks and parses a stored blob. With keys, unsigned blobs and
// signatures that none of them verifies are refused before anything else is
// parsed. maxDump > 0 bounds the decompressed dump (a
// *runtime.StateLimitError past it).
func decodeBlob(data []byte, keys [][]byte, maxDump int64) (*blob, error) {
	b, err := parseBlobKeys(data, keys)
	if err != nil || len(b.Dump) == 0 || !b.compressed {
		return b, err
	}
	d, err := decompressDump(b.Dump, maxDump)
	if errors.Is(err, runtime.ErrMemoryLimit) {
		return nil, err
	}
	if err != nil {
		return nil, corrupt("dump does not decompress: %v", err)
	}
	b.Dump, b.compressed = d, false
	return b, nil
}

// parseBlobKeys is parseBlob with the first of keys that verifies the
// signature (all of them are tried; nil keys: the blob need not be signed).
func parseBlobKeys(data []byte, keys [][]byte) (*blob, error) {
	if len(keys) == 0 {
		return parseBlob(data, nil)
	}
	var first error
	for i, key := range keys {
		b, err := parseBlob(data, key)
		if err == nil {
			b.oldKey = i > 0
			return b, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// intactEnvelope reports whether data ends with the SHA-256 of what
// precedes it (before the signature, when flagged), as every version's
// envelope does: what tells a newer build's blob from a damaged one.
func intactEnvelope(data []byte) bool {
	body := data
	if data[5]&flagSigned != 0 {
		if len(body) < 32 {
			return false
		}
		body = body[:len(body)-32]
	}
	if len(body) < 7+32 {
		return false
	}
	sum := sha256.Sum256(body[:len(body)-32])
	return bytes.Equal(sum[:], body[len(body)-32:])
}

// parseBlob checks a blob's checksum and signature and splits it into its
// parts, leaving the dump as stored (maybe compressed).
func parseBlob(data, key []byte) (*blob, error) {
	content, err := openEnvelope(data, key)
	if err != nil {
		return nil, err
	}
	return parseContent(content, data[4], data[5])
}

// openEnvelope checks a blob's magic, version, signature (with key) and
// checksum, and returns what they cover.
func openEnvelope(data, key []byte) ([]byte, error) {
	if len(data) < 7 || string(data[:4]) != blobMagic {
		return nil, corrupt("not a monty-go session blob")
	}
	if data[4] > blobVersionMax && data[4] < 20 && intactEnvelope(data) {
		// Written by a newer build (a rolling upgrade): not damaged, so
		// not to be kept aside and replaced by an empty session.
		return nil, fmt.Errorf("%w: blob format version %d, this build reads %d to %d", ErrNewerFormat, data[4], blobVersion, blobVersionMax)
	}
	if data[4] < blobVersion || data[4] > blobVersionMax {
		return nil, corrupt("blob format version %d, this build reads %d to %d", data[4], blobVersion, blobVersionMax)
	}
	flags := data[5]
	body := data
	if key != nil {
		if flags&flagSigned == 0 {
			return nil, corrupt("blob is not signed and signatures are required")
		}
		if len(body) < 32 {
			return nil, corrupt("truncated signature")
		}
		mac := hmac.New(sha256.New, key)
		mac.Write(body[:len(body)-32])
		if !hmac.Equal(mac.Sum(nil), body[len(body)-32:]) {
			return nil, corrupt("signature does not verify (tampered, or signed with another key)")
		}
		body = body[:len(body)-32]
	} else if flags&flagSigned != 0 {
		if len(body) < 32 {
			return nil, corrupt("truncated signature")
		}
		body = body[:len(body)-32]
	}
	if len(body) < 32 {
		return nil, corrupt("truncated")
	}
	content, sum := body[:len(body)-32], body[len(body)-32:]
	if got := sha256.Sum256(content); !bytes.Equal(got[:], sum) {
		return nil, corrupt("checksum mismatch (damaged or truncated)")
	}
	if len(content) < 7 {
		return nil, corrupt("truncated header")
	}
	return content, nil
}

// parseContent splits the content of a blob of format version and flags
// into its sections.
func parseContent(content []byte, version, flags byte) (*blob, error) {
	r := bytes.NewReader(content[6:])
	vlen, _ := r.ReadByte()
	monty := make([]byte, vlen)
	b := &blob{JSONOnly: flags&flagJSONOnly != 0}
	if _, err := io.ReadFull(r, monty); err != nil {
		return nil, corrupt("truncated header")
	}
	b.MontyVersion = string(monty)
	if _, err := io.ReadFull(r, b.ModuleSum[:]); err != nil {
		return nil, corrupt("truncated header")
	}
	parts := make([][]byte, 3, 9)
	switch version {
	case blobVersionKeys:
		parts = parts[:9]
	case blobVersionDrive:
		parts = parts[:8]
	case blobVersionAudit:
		parts = parts[:7]
	case blobVersionTC:
		parts = parts[:4]
	case blobVersionFiles:
		parts = parts[:5]
	case blobVersionRun, blobVersionParts:
		parts = parts[:6]
	}
	for i := range parts {
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil || int64(n) > int64(r.Len()) {
			return nil, corrupt("truncated section")
		}
		parts[i] = make([]byte, n)
		if _, err := io.ReadFull(r, parts[i]); err != nil {
			return nil, corrupt("truncated section")
		}
	}
	if r.Len() != 0 {
		return nil, corrupt("trailing bytes")
	}
	if err := json.Unmarshal(parts[0], &b.Names); err != nil {
		return nil, corrupt("names: %v", err)
	}
	b.JSON = parts[1]
	if !json.Valid(b.JSON) {
		return nil, corrupt("JSON view is not valid JSON")
	}
	b.Dump = parts[2]
	b.compressed = flags&flagCompressed != 0
	audit := version >= blobVersionAudit // sections as version 6's
	inParts := version == blobVersionParts || audit && flags&flagParts != 0
	if inParts {
		if b.JSONOnly || len(parts[5]) != 0 {
			return nil, corrupt("a dump in parts with no dump, or with a paused run")
		}
		p, err := decodeParts(b.Dump)
		if err != nil {
			return nil, err
		}
		b.Dump, b.Parts, b.compressed = nil, p, false
	}
	if len(parts) >= 4 && (version == blobVersionTC || len(parts[3]) > 0) {
		b.TypeCheck = &typecheck.Context{}
		if err := json.Unmarshal(parts[3], b.TypeCheck); err != nil {
			return nil, corrupt("type check context: %v", err)
		}
	}
	if len(parts) >= 5 && len(parts[4]) > 0 {
		b.Files = parts[4]
	}
	if version == blobVersionAudit || audit && len(parts[6]) > 0 {
		if err := json.Unmarshal(parts[6], &b.Decisions); err != nil || len(b.Decisions) == 0 {
			return nil, corrupt("decisions: not a non-empty JSON array (%v)", err)
		}
	}
	if version == blobVersionDrive || version == blobVersionKeys && len(parts[7]) > 0 {
		b.Driver = &Driver{}
		if err := json.Unmarshal(parts[7], b.Driver); err != nil || b.Driver.Name == "" {
			return nil, corrupt("driver: not a JSON object naming its surface (%v)", err)
		}
	}
	if version == blobVersionKeys {
		keys, err := decodeKeys(parts[8])
		if err != nil {
			return nil, err
		}
		b.Keys = keys
	}
	if version == blobVersionRun || audit && !inParts && len(parts[5]) > 0 {
		b.Run = &pausedRun{}
		if err := json.Unmarshal(parts[5], b.Run); err != nil {
			return nil, corrupt("paused run: %v", err)
		}
		if err := b.Run.check(); err != nil {
			return nil, corrupt("paused run: %v", err)
		}
	}
	return b, nil
}

// Inspection is what a stored blob says about itself, readable without an
// interpreter.
type Inspection struct {
	MontyVersion string
	// Globals are the public global names when the state was saved.
	Globals []string
	// JSON is the JSON view of the public JSON-serialisable globals.
	JSON json.RawMessage
	// JSONOnly is true for JSON-only sessions (no dump).
	JSONOnly bool
	// DumpSize is the size of the uncompressed interpreter dump, as the
	// blob declares it (the dump is not decompressed to inspect it).
	DumpSize int64
	// FilesSize is the size of the files section as stored (the session's
	// files under /work with their paths, each file compressed on its own,
	// see docs/state-format.md); 0 without files.
	FilesSize int64
	// Paused is the run the state holds paused at client tool calls or
	// approvals (its calls and their arguments), nil when none (or when a
	// driver's run was decided, for the driver to carry out): what an
	// operator needs to answer it, read without an interpreter. Its
	// calls' IdempotencyKey is empty (the blob does not say its session).
	Paused *Paused
	// Decisions are the decisions on the session's approval calls it
	// keeps (Session.Decisions), oldest first.
	Decisions []Decision
}

// Inspect checks a stored blob (its checksum, and its signature when key is
// set) and describes it, without decompressing the dump: the cost is the
// blob's own size, whatever it expands to. It returns an error matching
// ErrCorrupt for damaged, foreign or mis-signed blobs, and for a compressed
// dump that declares no size.
func Inspect(data, key []byte) (*Inspection, error) {
	b, err := parseBlob(data, key)
	if err != nil {
		return nil, err
	}
	size := int64(len(b.Dump))
	if b.Parts != nil {
		size = b.Parts.rawSize()
	}
	if b.compressed {
		n, ok := declaredSize(b.Dump)
		if !ok || n > 1<<62 {
			return nil, corrupt("compressed dump declares no size")
		}
		size = int64(n)
	}
	in := &Inspection{MontyVersion: b.MontyVersion, Globals: b.Names, JSON: b.JSON, JSONOnly: b.JSONOnly, DumpSize: size, FilesSize: int64(len(b.Files)),
		Decisions: b.Decisions}
	if b.Run != nil && len(b.Run.Decided) == 0 {
		// (A driver's run already decided is the driver's to carry out.)
		in.Paused = b.Run.public("")
	}
	return in, nil
}
