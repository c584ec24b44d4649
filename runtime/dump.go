package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/monty-go/monty/runtime/internal/wire"
)

// What a dump holds.
const (
	kindProgram = 0
	kindRun     = 1
	kindREPL    = 2
)

var kindNames = [...]string{"a compiled program", "a paused run", "a REPL"}

// dumpMagic starts every dump; the byte after it is the envelope version.
const (
	dumpMagic   = "MGOD"
	dumpVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The envelope: magic(4) version(1) kind(1) len(montyVersion)(1)
// montyVersion crc32c(payload)(4) len(payload)(4) payload. The checksum
// keeps truncated or corrupted bytes away from Monty's deserialiser, which
// trusts its input; sessions add an HMAC on top for untrusted storage.
func (it *Interpreter) dump(ctx context.Context, handle uint32, kind byte) ([]byte, error) {
	w := &it.req
	w.Reset()
	// The memory limit sizes the ceiling for the dump's own memory (a dump
	// is bounded by the heap it copies).
	w.Array(1)
	w.OptUint(uint64(max(it.limits.MaxMemory, 0)))
	r, err := it.call(ctx, opDump, handle)
	if err != nil {
		return nil, err
	}
	if err := r.ArrayOf(2); err != nil {
		return nil, err
	}
	got, err := r.Uint()
	if err != nil {
		return nil, err
	}
	if got != uint64(kind) {
		return nil, fmt.Errorf("%w: handle holds %s", ErrBadState, kindNames[min(got, 2)])
	}
	payload, err := r.Bytes()
	if err != nil {
		return nil, err
	}
	return it.engine.envelope(kind, payload), nil
}

// envelope wraps a payload of the module's in this package's dump envelope.
func (e *Engine) envelope(kind byte, payload []byte) []byte {
	v := e.version
	out := make([]byte, 0, 4+1+1+1+len(v)+4+4+len(payload))
	out = append(out, dumpMagic...)
	out = append(out, dumpVersion, kind, byte(len(v)))
	out = append(out, v...)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(payload, castagnoli))
	out = binary.BigEndian.AppendUint32(out, uint32(len(payload)))
	return append(out, payload...)
}

// checkDump validates the envelope and returns the payload.
func (it *Interpreter) checkDump(b []byte, kind byte) ([]byte, error) {
	bad := func(format string, args ...any) ([]byte, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrInvalidDump}, args...)...)
	}
	if len(b) < 7 || string(b[:4]) != dumpMagic {
		return bad("not a monty-go dump (bad magic)")
	}
	if b[4] != dumpVersion {
		return bad("dump envelope version %d, this package reads %d", b[4], dumpVersion)
	}
	if b[5] != kind {
		if int(b[5]) < len(kindNames) {
			return bad("dump holds %s, not %s", kindNames[b[5]], kindNames[kind])
		}
		return bad("unknown dump kind %d", b[5])
	}
	vlen := int(b[6])
	rest := b[7:]
	if len(rest) < vlen+8 {
		return bad("truncated header")
	}
	if v := string(rest[:vlen]); v != it.engine.version {
		return bad("made by monty %s, this module runs monty %s", v, it.engine.version)
	}
	rest = rest[vlen:]
	sum, n := binary.BigEndian.Uint32(rest), binary.BigEndian.Uint32(rest[4:])
	payload := rest[8:]
	if uint32(len(payload)) != n {
		return bad("payload is %d bytes, header says %d (truncated?)", len(payload), n)
	}
	if crc32.Checksum(payload, castagnoli) != sum {
		return bad("checksum mismatch (corrupted)")
	}
	return payload, nil
}

// StateLimitError reports state too large to load under Limits.MaxMemory:
// its dump alone, or the heap it restored, is over the limit. Nothing was
// loaded (the interpreter stays usable, unless Dead says otherwise). It
// matches ErrMemoryLimit.
type StateLimitError struct {
	// Need is the bytes the state needs at least: the dump's size, or the
	// heap measured after loading it.
	Need int64
	// Limit is the MaxMemory in force.
	Limit int64
}

// Error says what the state needs, the limit, and what to do.
func (e *StateLimitError) Error() string {
	return fmt.Sprintf("monty: memory limit exceeded: the state needs at least %s of heap, more than the memory limit of %s; "+
		"nothing was loaded: raise the memory limit, or start from fresh state", ByteSize(e.Need), ByteSize(e.Limit))
}

// Is makes errors.Is(err, ErrMemoryLimit) true.
func (e *StateLimitError) Is(target error) bool { return target == ErrMemoryLimit }

// byteSize formats n bytes for a message: "16 MiB", "3.2 MiB", "100 bytes".
func ByteSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// load sends a dump to the module and returns the new handle and a reader
// at the progress item (null when not paused). Under a memory limit, a dump
// larger than the limit is refused before it reaches the module (a heap is
// never smaller than its dump), the module loads it under the limit's hard
// ceiling, and a restored heap over the limit is freed again: each is a
// *StateLimitError.
func (it *Interpreter) load(ctx context.Context, b []byte, kind byte) (uint32, *wire.Reader, error) {
	payload, err := it.checkDump(b, kind)
	if err != nil {
		return 0, nil, err
	}
	return it.loadPayload(ctx, payload, kind)
}

// loadPayload restores Monty's own dump bytes of the given kind.
func (it *Interpreter) loadPayload(ctx context.Context, payload []byte, kind byte) (uint32, *wire.Reader, error) {
	limit := it.limits.MaxMemory
	if limit > 0 && int64(len(payload)) > limit {
		return 0, nil, &StateLimitError{Need: int64(len(payload)), Limit: limit}
	}
	w := &it.req
	w.Reset()
	w.Array(3)
	w.Uint(uint64(kind))
	w.Bytes(payload)
	w.OptUint(uint64(max(limit, 0)))
	r, err := it.call(ctx, opLoad, 0)
	if err != nil {
		if limit > 0 && errors.Is(err, ErrDead) {
			// The hard ceiling ended the instance while the heap was restored.
			return 0, nil, fmt.Errorf("%w (%w)", &StateLimitError{Need: 2 * limit, Limit: limit}, err)
		}
		return 0, nil, err
	}
	if err := r.ArrayOf(3); err != nil {
		return 0, nil, err
	}
	h, err := r.Uint32()
	if err != nil {
		return 0, nil, err
	}
	if _, err := r.Uint(); err != nil {
		return 0, nil, err
	}
	if limit > 0 {
		// The reader aliases a response the next call overwrites: keep it.
		rest := bytes.Clone(r.Rest())
		used, err := it.MemoryUsage(ctx)
		if err != nil {
			return 0, nil, err
		}
		if used > limit {
			it.free(h)
			return 0, nil, &StateLimitError{Need: used, Limit: limit}
		}
		r = wire.NewReader(rest)
	}
	return h, r, nil
}
