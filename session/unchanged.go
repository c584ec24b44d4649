package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/monty-go/monty/runtime"
)

// A call that changes nothing stores nothing: reading a global costs no
// write, and succeeds while the store only reads. Monty's dump moves with
// every call even when the code changed nothing (the snippet counter, the
// clocks of execution, the collector's bookkeeping, heap slots freed at
// its end), so a call is taken to have changed nothing when the files,
// the paused run and the decisions are as stored, and the rest of the
// REPL's state (runtime.Delta.State) equals the stored one once those
// moving parts are set aside. Anything else that differs (a
// global, private or public, an object on the heap, a function's closure
// or defaults, a class attribute, the random generator) is a change. What
// the call appended (its snippet's source, strings it interned) is not
// stored then; the next save that stores stores it with its own.

// stateDecoding reads the rest of a REPL's state: Monty's dump, a CBOR
// map behind its header. The heap may be large, and is flat. Made on
// first use, not at every process's start.
var stateDecoding = sync.OnceValue(func() cbor.DecMode {
	m, err := cbor.DecOptions{MaxNestedLevels: 256, MaxArrayElements: 1<<31 - 1, MaxMapPairs: 1<<31 - 1}.DecMode()
	if err != nil {
		panic(err) // constant options
	}
	return m
})

// stateEncoding writes a normalised state: canonical, so that equal
// states are equal bytes.
var stateEncoding = sync.OnceValue(func() cbor.EncMode {
	m, err := cbor.CanonicalEncOptions().EncMode()
	if err != nil {
		panic(err) // constant options
	}
	return m
})

// maxCompared bounds the REPL state a call is compared against to tell
// whether it changed nothing: the comparison reads the state once more (a
// delta dump, decoded into Go values several times its size), which for a
// larger one costs more time and memory than the write it would save.
const maxCompared = 1 << 20

// stateHeaderLen is the length of the header of Monty's dump: its magic
// and version.
const stateHeaderLen = len(runtime.MontyDumpMagic) + 2

// stateSum is the digest of state, the rest of an idle REPL's state, with
// what every call moves set aside; ok is false when state is not a dump
// this understands (then no call is taken to have changed nothing).
func stateSum(state []byte) (sum [32]byte, ok bool) {
	if len(state) < stateHeaderLen || !bytes.HasPrefix(state, []byte(runtime.MontyDumpMagic)) {
		return sum, false
	}
	var v any
	if err := stateDecoding().Unmarshal(state[stateHeaderLen:], &v); err != nil {
		return sum, false
	}
	idle := field(field(v, "state"), "Idle")
	heap := field(idle, "heap")
	if idle == nil || heap == nil {
		return sum, false
	}
	delete(idle, "next_input_id")
	delete(heap, "purple_count")
	delete(heap, "allocations_since_gc")
	if tracker := field(heap, "tracker"); tracker != nil {
		delete(tracker, "total_execution_time")
		delete(tracker, "feed_execution_time")
		delete(tracker, "limits") // set again for every call
	}
	if entries, ok := heap["entries"].([]any); ok {
		for len(entries) > 0 && entries[len(entries)-1] == nil {
			entries = entries[:len(entries)-1] // freed at the end
		}
		for _, e := range entries {
			if m, ok := e.(map[any]any); ok {
				delete(m, "C") // the collector's colour
			}
		}
		heap["entries"] = entries
	}
	out, err := stateEncoding().Marshal(v)
	if err != nil {
		return sum, false
	}
	h := sha256.New()
	h.Write(state[:stateHeaderLen])
	h.Write(out)
	copy(sum[:], h.Sum(nil))
	return sum, true
}

// field is v[name] when v is a map and that is a map, else nil.
func field(v any, name string) map[any]any {
	m, ok := v.(map[any]any)
	if !ok {
		return nil
	}
	f, _ := m[name].(map[any]any)
	return f
}

// sum is the digest of p's state (stateSum), computed once.
func (p *dumpParts) sum() ([32]byte, bool) {
	if !p.summed {
		p.summed = true
		if state, err := p.state.bytes(); err == nil {
			p.stateSum, p.sumOK = stateSum(state)
		}
	}
	return p.stateSum, p.sumOK
}

// unchangedBy reports whether repl, idle, holds the saved state but for
// what every call moves, and nothing else is to be stored: the saved
// state holds no paused run, is signed with the signing key and stamped
// with this engine's module, and /work's files are as saved. It is asked
// before the JSON view is computed (which runs code in the REPL). A saved
// state whose entry has lived more than half of its time in the store is
// stored again, so that reads keep it alive. A state over maxCompared is
// taken to have changed.
func (st *storedState) unchangedBy(ctx context.Context, repl *runtime.REPL) bool {
	switch {
	case st.saved == nil, st.lineage == nil, st.lineage.state.raw > maxCompared, st.saved.Run != nil,
		st.files != nil && st.files.Generation() != st.filesGen,
		st.saved.oldKey, st.saved.MontyVersion != st.montyVersion, st.saved.ModuleSum != st.module:
		return false
	}
	if exp := st.info.Expires; !exp.IsZero() && time.Until(exp) < exp.Sub(st.info.Modified)/2 {
		return false
	}
	want, ok := st.lineage.sum()
	if !ok {
		return false
	}
	since := st.lineage.marks
	if st.lineage.compared {
		since = st.lineage.comparedTo
	}
	d, err := repl.DumpDelta(ctx, since)
	if err != nil {
		return false
	}
	st.lineage.compared, st.lineage.comparedTo = true, d.Marks
	got, ok := stateSum(d.State)
	return ok && got == want
}
