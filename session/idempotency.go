package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/store"
)

// How long and how many idempotency keys a session keeps (Idempotency):
// the last KeysKept, none older than KeyTTL, and of their answers the
// newest that fit in AnswersKept bytes together.
const (
	KeysKept    = 100
	KeyTTL      = 24 * time.Hour
	AnswersKept = 1 << 20
	// MaxKeyLength bounds an idempotency key.
	MaxKeyLength = 255
)

// ErrStateChanged matches the error of a call whose ExecOptions.IfState
// names another state than the stored one: nothing ran.
var ErrStateChanged = errors.New("session: the stored state is not the one the call expects")

// ErrKeyReused matches the error of a call whose idempotency key an
// earlier, different request of the session used (*KeyReusedError).
var ErrKeyReused = errors.New("session: idempotency key already used for a different request")

// KeyReusedError is a call's idempotency key used at At by a request with
// another fingerprint: nothing ran. It matches ErrKeyReused.
type KeyReusedError struct {
	Key string
	At  time.Time
}

// Error says which key was used when, and what to do.
func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("%v: key %q was used at %s for another request; use a new key for a new request",
		ErrKeyReused, e.Key, e.At.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrKeyReused) true.
func (e *KeyReusedError) Is(target error) bool { return target == ErrKeyReused }

// Idempotency makes a call safe to retry (ExecOptions.Idempotency,
// ResumeOptions.Idempotency). The call's key, its request's fingerprint
// and its answer are stored with the state the call leaves, in the same
// compare-and-set: a later call of the session with the key, in this
// process or another, runs nothing and returns Result.Replay, whose
// Answer is the stored one; a call with the key and another fingerprint
// fails with *KeyReusedError.
//
// A call whose code raised, or whose state was over the size cap, stores
// the key (and its answer) with the state as it was, so that its retry
// does not run the code again either. A call that failed without an
// answer (a store failure, cancellation, a busy session, a refused
// resume) stores nothing: it had no effect, and its retry runs.
//
// Keys are kept as the constants KeysKept, KeyTTL and AnswersKept say; a
// retry after its key was dropped runs as a new call. A key whose answer
// was dropped (over AnswersKept) still replays, with Replay.Answer nil.
type Idempotency struct {
	// Key is the client's key: 1 to MaxKeyLength bytes.
	Key string
	// Fingerprint identifies the request (such as a hash of its canonical
	// form): a retry must have the same.
	Fingerprint string
	// Answer, called once the call is over and before its state is
	// stored, returns what a retry answers: JSON text (anything else is
	// not kept). Nil: no answer is kept, only the key.
	Answer func(res *Result) []byte
}

// check refuses keys that are empty or too long.
func (o *Idempotency) check() error {
	if o.Key == "" || len(o.Key) > MaxKeyLength {
		return fmt.Errorf("%w: an idempotency key has 1 to %d bytes", runtime.ErrInvalidOption, MaxKeyLength)
	}
	return nil
}

// Replay is the answer to a call whose idempotency key an earlier call
// of the same request used (Result.Replay): that call's time, answer and
// the state it left.
type Replay struct {
	// Key is the call's idempotency key.
	Key string
	// At is when the first call was stored.
	At time.Time
	// Answer is what Idempotency.Answer returned for the first call; nil
	// when it was not kept (AnswerSize bytes, over AnswersKept).
	Answer     []byte
	AnswerSize int
	// Saved is true when the first call stored its state (false when
	// its code raised, or its state was over the size cap: its key was
	// stored with the state as it was).
	Saved bool
	// HasState, StateSize and StateHash describe the state the first call
	// stored (the one holding its key).
	HasState  bool
	StateSize int64
	StateHash string
}

// keyRecord is a used idempotency key as the state stores it.
type keyRecord struct {
	Key         string          `json:"key"`
	Fingerprint string          `json:"fingerprint"`
	At          time.Time       `json:"at"`
	Answer      json.RawMessage `json:"answer,omitempty"`
	// AnswerSize is the answer's size; with Answer empty, it was dropped.
	AnswerSize int `json:"answer_size,omitempty"`
	// Saved: the call stored its own state (Replay.Saved).
	Saved bool `json:"saved,omitempty"`
	// State is the stored state that first held the record, filled in by
	// the save that replaces it (nil: the stored one holds it).
	State *keyState `json:"state,omitempty"`
}

// keyState is the stored state a call with a key left.
type keyState struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// maxKeysSection bounds the keys section once decompressed: the answers
// kept and the records' own fields.
const maxKeysSection = AnswersKept + KeysKept*(2*MaxKeyLength+512)

// encodeKeys is the keys section of a blob: the records as a JSON array,
// compressed with zstd when compress is set and it is worth it (answers
// that repeat a growing result shrink to what each added).
func encodeKeys(records []keyRecord, compress bool) ([]byte, error) {
	data, err := json.Marshal(records)
	if err != nil || !compress || len(data) < 1024 {
		return data, err
	}
	return compressDump(data), nil
}

// decodeKeys parses a keys section (encodeKeys): errors match ErrCorrupt.
func decodeKeys(section []byte) ([]keyRecord, error) {
	if bytes.HasPrefix(section, zstdMagic) {
		data, err := decompressDump(section, maxKeysSection)
		if err != nil {
			return nil, corrupt("idempotency keys: do not decompress within %d bytes: %v", maxKeysSection, err)
		}
		section = data
	}
	var records []keyRecord
	if err := json.Unmarshal(section, &records); err != nil || len(records) == 0 {
		return nil, corrupt("idempotency keys: not a non-empty JSON array (%v)", err)
	}
	return records, nil
}

// zstdMagic starts every zstd frame (and never a JSON text).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// findKey returns the record of key in records that has not expired at
// now; nil when none.
func findKey(records []keyRecord, key string, now time.Time) *keyRecord {
	for i := len(records) - 1; i >= 0; i-- {
		if r := &records[i]; r.Key == key && now.Sub(r.At) < KeyTTL {
			return r
		}
	}
	return nil
}

// nextKeys are the records a save stores: older's (whose records without
// a state get replaced, the state being replaced, nil when none) that
// have not expired, then add (nil: none), bounded as KeysKept and
// AnswersKept say.
func nextKeys(older []keyRecord, replaced *keyState, add *keyRecord, now time.Time) []keyRecord {
	out := make([]keyRecord, 0, len(older)+1)
	for _, r := range older {
		if now.Sub(r.At) >= KeyTTL || add != nil && r.Key == add.Key {
			continue
		}
		if r.State == nil && replaced != nil {
			st := *replaced
			r.State = &st
		}
		out = append(out, r)
	}
	if add != nil {
		out = append(out, *add)
	}
	if len(out) > KeysKept {
		out = out[len(out)-KeysKept:]
	}
	budget := AnswersKept
	for i := len(out) - 1; i >= 0; i-- {
		if n := len(out[i].Answer); n > 0 {
			if n > budget {
				out[i].Answer = nil
				continue
			}
			budget -= n
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// newKeyRecord is the record of a call with o, which left res (its own
// state stored when saved), at now.
func newKeyRecord(o *Idempotency, res *Result, saved bool, now time.Time) *keyRecord {
	r := &keyRecord{Key: o.Key, Fingerprint: o.Fingerprint, At: now.UTC(), Saved: saved}
	if o.Answer != nil {
		if answer := o.Answer(res); json.Valid(answer) {
			var compact bytes.Buffer
			if json.Compact(&compact, answer) == nil {
				r.Answer, r.AnswerSize = compact.Bytes(), compact.Len()
			}
		}
	}
	if len(r.Answer) > AnswersKept {
		r.Answer = nil
	}
	return r
}

// replayOf is the Replay of r, a record of the stored state st, for a
// call with o: an error matching ErrKeyReused when o is another request.
func replayOf(st *storedState, r *keyRecord, o *Idempotency) (*Result, error) {
	if r.Fingerprint != o.Fingerprint {
		return nil, &KeyReusedError{Key: r.Key, At: r.At}
	}
	rp := &Replay{Key: r.Key, At: r.At, AnswerSize: r.AnswerSize, Saved: r.Saved}
	if len(r.Answer) > 0 {
		rp.Answer = slices.Clone([]byte(r.Answer))
	}
	res := &Result{Replay: rp}
	st.describe(res)
	if r.State != nil {
		res.HasState, res.StateSize, res.StateHash = true, r.State.Size, r.State.SHA256
	}
	rp.HasState, rp.StateSize, rp.StateHash = res.HasState, res.StateSize, res.StateHash
	return res, nil
}

// PutState stores data, a state blob this service wrote (it must verify
// with opts' keys), as session id's state under cond, as an upload of a
// downloaded state does. With o, the key is stored in the blob (signed
// again with opts.SigningKey), in the same compare-and-set: a retry gets
// a Result replaying the first upload (Result.Replay), and a key another
// upload of the session used fails with *KeyReusedError. Without cond's
// conditions, the compare-and-set is on the state the key was looked up
// in. The returned Info describes what was stored.
func PutState(ctx context.Context, id string, data []byte, opts Options, cond store.Cond, o *Idempotency) (store.Info, *Result, error) {
	if o == nil {
		info, err := opts.Store.Put(ctx, id, data, cond)
		return info, nil, err
	}
	if err := o.check(); err != nil {
		return store.Info{}, nil, err
	}
	b, err := parseBlobKeys(data, opts.readKeys())
	if err != nil {
		return store.Info{}, nil, err
	}
	now := time.Now()
	held := &keyState{Size: int64(len(data)), SHA256: store.Checksum(data)}
	b.Keys = nextKeys(b.Keys, held, newKeyRecord(o, &Result{}, true, now), now)
	if data, err = b.encode(opts.SigningKey, !opts.NoCompression); err != nil {
		return store.Info{}, nil, err
	}
	if limit := opts.maxStateSize(); int64(len(data)) > limit {
		return store.Info{}, nil, &sizeError{size: int64(len(data)), limit: limit}
	}
	for attempt := 0; ; attempt++ {
		res, version, err := storedReplay(ctx, id, opts, o)
		if res != nil || err != nil {
			return store.Info{}, res, err
		}
		c := cond
		if c.IfVersion == "" && !c.IfAbsent {
			c = store.Cond{IfVersion: version, IfAbsent: version == ""}
		}
		info, err := opts.Store.Put(ctx, id, data, c)
		if errors.Is(err, store.ErrConflict) && c != cond && attempt == 0 {
			continue // another writer: maybe the same upload, retried
		}
		return info, nil, err
	}
}

// ReplayedState looks o's key up in the state stored under id, as
// Replayed does for an open session: the Result replaying the call or
// upload that used it, nil when none did, or a *KeyReusedError.
func ReplayedState(ctx context.Context, id string, opts Options, o *Idempotency) (*Result, error) {
	res, _, err := storedReplay(ctx, id, opts, o)
	return res, err
}

// storedReplay looks o's key up in the state stored under id: the Result
// replaying the call that used it, nil when none did, with the stored
// version ("" when nothing is stored). A stored state that does not load
// has no keys.
func storedReplay(ctx context.Context, id string, opts Options, o *Idempotency) (*Result, string, error) {
	obj, err := opts.Store.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, "", nil
	case errors.Is(err, store.ErrUnreadable):
		info, err := opts.Store.Stat(ctx, id)
		return nil, info.Version, err
	case err != nil:
		return nil, "", err
	}
	b, err := parseBlobKeys(obj.Data, opts.readKeys())
	if err != nil {
		return nil, obj.Info.Version, nil
	}
	r := findKey(b.Keys, o.Key, time.Now())
	if r == nil {
		return nil, obj.Info.Version, nil
	}
	res, err := replayOf(&storedState{saved: b, info: obj.Info}, r, o)
	return res, obj.Info.Version, err
}
