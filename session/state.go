package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/wasm"
)

// storedState is a session's state as the Store holds it: the blob last
// saved or loaded, the store's version of it (every save is a
// compare-and-set on that version), and /work's files as they stand
// against it. A Session holds one; its fields are guarded by the
// session's lock.
type storedState struct {
	id   string
	opts *Options // the session's (Store, keys, size caps, compression)
	// montyVersion and module stamp every state saved: the Monty version
	// and the module of the engine that runs the session.
	montyVersion string
	module       [32]byte

	version string // store version of the blob this state matches; "" if none
	saved   *blob  // last stored state; nil when none
	info    store.Info
	// lineage is the dump in parts that the live REPL continues (the one
	// it was loaded from or last saved as), so a save stores only what
	// was added since; nil when the next save must store everything.
	lineage *dumpParts

	// files is /work (nil without Options.Files). Between calls it holds
	// the files of saved; it held those of filesOf (nil: none) when its
	// generation was filesGen.
	files    *vfs.MemFS
	filesOf  *blob
	filesGen uint64
	// filesCache holds the stored forms of /work's files as last saved or
	// loaded, so a save compresses only the files that changed.
	filesCache fileCache
}

// filesMark is what a state being saved holds of /work: its generation
// and the stored forms of its files, which become the state's once the
// save succeeds.
type filesMark struct {
	gen   uint64
	cache fileCache
}

// newStoredState is the stored state of session id, stamped for eng; with
// Options.Files it has an empty /work.
func newStoredState(id string, opts *Options, eng *runtime.Engine) *storedState {
	st := &storedState{id: id, opts: opts, montyVersion: eng.MontyVersion(), module: moduleSum(eng)}
	if opts.Files != nil {
		st.files = newFilesMem(opts.fileLimits())
		st.filesGen = st.files.Generation()
	}
	return st
}

// moduleSum is the stamp of the module eng runs (docs/state-format.md):
// its SHA-256, as the engine knows it; the embedded module's when eng is
// nil (a state written without an interpreter, by the file operations).
func moduleSum(eng *runtime.Engine) [32]byte {
	h := wasm.SHA256
	if eng != nil {
		h = eng.ModuleSHA256()
	}
	var sum [32]byte
	_, _ = hex.Decode(sum[:], []byte(h))
	return sum
}

// blank is the state of a session with nothing stored: an empty JSON-only
// state, which loads as an empty session, stamped with a Monty version and
// a module.
func blank(montyVersion string, module [32]byte) *blob {
	return &blob{MontyVersion: montyVersion, ModuleSum: module, JSON: []byte("{}"), JSONOnly: true}
}

// get reads the stored entry; an error matching store.ErrNotFound when
// there is none, store.ErrUnreadable when the store cannot read it.
func (st *storedState) get(ctx context.Context) (store.Object, error) {
	return st.opts.Store.Get(ctx, st.id)
}

// decode verifies and parses data, a blob as stored: ErrCorrupt when it
// is damaged or does not verify.
func (st *storedState) decode(data []byte) (*blob, error) {
	return decodeBlob(data, st.opts.readKeys(), st.opts.Limits.MaxMemory)
}

// adopt makes b, read from the store with info, the saved state.
func (st *storedState) adopt(info store.Info, b *blob) {
	st.version, st.saved, st.info = info.Version, b, info
}

// forget makes the state empty, as when nothing is stored.
func (st *storedState) forget() {
	st.version, st.saved = "", nil
}

// put stores b, with /work as mark says, under compare-and-set on the
// version this state matches, and makes it the saved state. A state over
// Options.MaxStateSize is not stored (*sizeError); a store failure is
// returned as it is (store.ErrConflict when another writer got there
// first: this state no longer matches the store).
func (st *storedState) put(ctx context.Context, b *blob, mark filesMark) (store.Info, error) {
	data, err := b.encode(st.opts.SigningKey, !st.opts.NoCompression)
	if err != nil {
		return store.Info{}, err
	}
	if limit := st.opts.maxStateSize(); int64(len(data)) > limit {
		return store.Info{}, &sizeError{size: int64(len(data)), limit: limit}
	}
	info, err := st.opts.Store.Put(ctx, st.id, data, store.Cond{IfVersion: st.version, IfAbsent: st.version == ""})
	if err != nil {
		return store.Info{}, err
	}
	st.adopt(info, b)
	st.lineage = b.Parts
	if st.files != nil {
		st.filesOf, st.filesGen, st.filesCache = b, mark.gen, mark.cache
	}
	return info, nil
}

// sizeError: an encoded state over Options.MaxStateSize, not stored. It
// matches ErrStateTooLarge.
type sizeError struct{ size, limit int64 }

func (e *sizeError) Error() string {
	return fmt.Sprintf("%v: %d bytes, over the %d-byte limit (Options.MaxStateSize)", ErrStateTooLarge, e.size, e.limit)
}

func (e *sizeError) Is(target error) bool { return target == ErrStateTooLarge }

// putFiles stores the saved state with /work's files in it, as put does.
func (st *storedState) putFiles(ctx context.Context) (store.Info, error) {
	mark := filesMark{gen: st.files.Generation()}
	base := st.saved
	if base == nil {
		base = blank(st.montyVersion, st.module)
	}
	var b *blob
	b, mark.cache = withFiles(base, st.files, st.filesCache, !st.opts.NoCompression)
	return st.put(ctx, b, mark)
}

// changed reports whether the store holds another state than this one
// (another session of the same id saved since).
func (st *storedState) changed(ctx context.Context) (bool, error) {
	info, err := st.opts.Store.Stat(ctx, st.id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return st.version != "", nil
	case errors.Is(err, store.ErrUnreadable):
		// The damaged entry this state started over from (the save's
		// compare-and-set decides), or one damaged since it was loaded
		// (loading it again keeps it aside).
		return st.saved != nil, nil
	case err != nil:
		return false, err
	}
	return info.Version != st.version, nil
}

// keepAside stores a copy of data, a stored entry that does not load,
// and returns the copy's id (KeepAside).
func (st *storedState) keepAside(ctx context.Context, data []byte) (string, error) {
	return KeepAside(ctx, st.opts.Store, st.id, data)
}

// KeepAside stores a copy of data, the entry stored at id that does not
// load, under an id named after its content ("<id>.corrupt.<16 hex>";
// meeting the same blob again keeps one copy), and returns that id. It is
// how every surface keeps damaged state aside before it reports it.
func KeepAside(ctx context.Context, st store.Store, id string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	qid := fmt.Sprintf("%s.corrupt.%x", id, sum[:8])
	if len(qid) > 200 {
		qid = fmt.Sprintf("corrupt.%x.%x", sha256.Sum256([]byte(id)), sum[:8])
	}
	if _, err := st.Put(ctx, qid, data, store.Cond{IfAbsent: true}); err != nil && !errors.Is(err, store.ErrConflict) {
		return "", err
	}
	return qid, nil
}

// startOver empties the state in place of an entry that was kept aside:
// the next save replaces that entry, under compare-and-set on replace (""
// the stored version, as Stat reports it).
func (st *storedState) startOver(ctx context.Context, replace string) {
	if replace == "" {
		if obj, err := st.opts.Store.Stat(ctx, st.id); err == nil {
			replace = obj.Version
		}
	}
	st.version, st.saved = replace, nil
}

// salvage hands over the bytes of an entry the store cannot read, through
// the store's store.Salvager, with the token a save replaces it under. An
// error matching store.ErrNotFound means the entry is gone.
func (st *storedState) salvage(ctx context.Context) (data []byte, token string, err error) {
	sv, ok := st.opts.Store.(store.Salvager)
	if !ok {
		return nil, "", errors.New("this store cannot hand over an entry it cannot read")
	}
	return sv.Salvage(ctx, st.id, st.opts.maxSalvage())
}

// describe fills the state fields of res from the saved state.
func (st *storedState) describe(res *Result) {
	res.HasState = st.saved != nil
	if res.HasState {
		res.StateSize, res.StateHash = st.info.Size, st.info.SHA256
	}
}

// restoreFiles makes /work hold the files of blob b (nil: none), unless it
// holds them already.
func (st *storedState) restoreFiles(b *blob) error {
	if st.files == nil {
		return nil
	}
	if st.filesOf == b && st.files.Generation() == st.filesGen {
		return nil
	}
	cache, err := restoreInto(st.files, b)
	if err != nil {
		return err
	}
	st.filesOf, st.filesGen, st.filesCache = b, st.files.Generation(), cache
	return nil
}

// filesSection sets the files section of b, a state being saved: /work's
// files (encoded again only when they changed since they were last stored
// or loaded, and then only the changed files compressed again), or
// without Options.Files the saved state's section unchanged. It returns
// what the section holds of /work.
func (st *storedState) filesSection(b *blob) filesMark {
	if st.files == nil {
		if st.saved != nil {
			b.Files = st.saved.Files
		}
		return filesMark{}
	}
	gen := st.files.Generation()
	switch {
	case gen != st.filesGen:
		var next fileCache
		b.Files, next = encodeFiles(st.files.Snapshot(), !st.opts.NoCompression, st.filesCache)
		return filesMark{gen, next}
	case st.filesOf != nil:
		b.Files = st.filesOf.Files
	}
	return filesMark{gen, st.filesCache}
}

// storedFiles returns the files of the saved state: the live /work, which
// equals them between calls, or (without Options.Files) the saved state's
// files read afresh.
func (st *storedState) storedFiles() (*vfs.MemFS, error) {
	if st.files != nil {
		return st.files, nil
	}
	mem := newFilesMem(st.opts.fileLimits())
	_, err := restoreInto(mem, st.saved)
	return mem, err
}
