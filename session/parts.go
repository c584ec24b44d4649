package session

import (
	"encoding/binary"
	"fmt"

	"github.com/monty-go/monty/runtime"
)

// A dump in parts (format version 5, docs/state-format.md): most of a long
// session's dump only ever grows (interned strings, compiled functions,
// snippet sources), so a save stores what the call added as one more
// segment, next to the segments already stored, and the rest of the state
// afresh. Segments are merged as they pile up, two neighbours at a time
// once the older is no larger than the newer, so a session of n calls
// holds about log2(n) of them and each byte is recompressed about log2(n)
// times over its life.

// dumpParts is an idle REPL's dump as stored in parts.
type dumpParts struct {
	marks    runtime.DumpMarks // how far the segments reach
	segments []segment         // the added parts, oldest first
	state    segment           // the rest of the state

	// stateSum is the state's digest (unchanged.go), once summed;
	// sumOK when it has one.
	summed, sumOK bool
	stateSum      [32]byte

	// comparedTo is how far the last comparison with a live REPL of this
	// lineage reached, when there was one: the next asks only for what
	// was added since, which it does not read (a delta's state is the
	// same whatever its marks). Calls that store nothing (reads) add
	// their snippets all the same, so a comparison from marks would read
	// every snippet since the last save, each time.
	compared   bool
	comparedTo runtime.DumpMarks
}

// segment is one stored part: its bytes as stored (zstd-compressed when
// compressed) and its size uncompressed.
type segment struct {
	raw        int
	stored     []byte
	compressed bool
}

const partsFormat = 1

// marksLen is the size of the marks in a parts section: seven u64.
const marksLen = 7 * 8

// minCompressed is the smallest segment compressed: compressing costs a
// fixed 40 µs or so whatever the size (the encoder resets its tables),
// more than a turn's whole save of a small session, to keep a few hundred
// bytes out of the store.
const minCompressed = 4 << 10

func newSegment(raw []byte, compress bool) segment {
	if !compress || len(raw) < minCompressed {
		return segment{raw: len(raw), stored: raw}
	}
	return segment{raw: len(raw), stored: compressDump(raw), compressed: true}
}

// bytes returns the segment uncompressed: never more than the size it
// declares, which it must have.
func (s segment) bytes() ([]byte, error) {
	if !s.compressed {
		return s.stored, nil
	}
	b, err := decompressDump(s.stored, max(int64(s.raw), 1))
	if err == nil && len(b) != s.raw {
		err = fmt.Errorf("%d bytes, %d declared", len(b), s.raw)
	}
	return b, err
}

// rawSize is the whole dump's size uncompressed.
func (p *dumpParts) rawSize() int64 {
	n := int64(p.state.raw)
	for _, s := range p.segments {
		n += int64(s.raw)
	}
	return n
}

// next is the parts after a save whose delta d continues p (nil: the REPL
// is a new lineage), with the added segment merged into its elders as the
// rule above says.
func (p *dumpParts) next(d *runtime.Delta, compress bool) (*dumpParts, error) {
	var segs []segment
	if p != nil {
		segs = make([]segment, len(p.segments), len(p.segments)+1)
		copy(segs, p.segments)
	}
	segs = append(segs, newSegment(d.Added, compress))
	for n := len(segs); n >= 2 && segs[n-2].raw <= segs[n-1].raw; n = len(segs) {
		older, err := segs[n-2].bytes()
		if err != nil {
			return nil, corrupt("dump segment does not decompress: %v", err)
		}
		newer, err := segs[n-1].bytes()
		if err != nil {
			return nil, corrupt("dump segment does not decompress: %v", err)
		}
		merged, err := runtime.MergeAdded(older, newer)
		if err != nil {
			return nil, corrupt("dump segments do not merge: %v", err)
		}
		segs = append(segs[:n-2], newSegment(merged, compress))
	}
	return &dumpParts{marks: d.Marks, segments: segs, state: newSegment(d.State, compress)}, nil
}

// join rebuilds the whole dump, for eng to load, reading at most max bytes
// uncompressed (0: no bound; past it a *runtime.StateLimitError).
func (p *dumpParts) join(eng *runtime.Engine, max int64) ([]byte, error) {
	if max > 0 && p.rawSize() > max {
		return nil, &runtime.StateLimitError{Need: p.rawSize(), Limit: max}
	}
	added := make([][]byte, len(p.segments))
	for i, s := range p.segments {
		b, err := s.bytes()
		if err != nil {
			return nil, corrupt("dump segment %d does not decompress: %v", i, err)
		}
		added[i] = b
	}
	state, err := p.state.bytes()
	if err != nil {
		return nil, corrupt("dump state does not decompress: %v", err)
	}
	dump, err := eng.JoinDump(added, state)
	if err != nil {
		return nil, corrupt("dump parts do not join: %v", err)
	}
	return dump, nil
}

// encode writes the parts section: format, the marks, the segments, the
// state (each as encoding: 0 raw, 1 zstd; raw size; stored size; stored
// bytes).
func (p *dumpParts) encode() []byte {
	n := 1 + marksLen + 4 + 9
	for _, s := range p.segments {
		n += 9 + len(s.stored)
	}
	out := make([]byte, 0, n+len(p.state.stored))
	out = append(out, partsFormat)
	m := p.marks
	for _, v := range []uint64{m.Strings, m.Bytes, m.LongInts, m.Functions, m.EvalSources, m.Inputs, m.Names} {
		out = binary.BigEndian.AppendUint64(out, v)
	}
	out = binary.BigEndian.AppendUint32(out, uint32(len(p.segments)))
	for _, s := range append(p.segments, p.state) {
		enc := byte(0)
		if s.compressed {
			enc = 1
		}
		out = append(out, enc)
		out = binary.BigEndian.AppendUint32(out, uint32(s.raw))
		out = binary.BigEndian.AppendUint32(out, uint32(len(s.stored)))
		out = append(out, s.stored...)
	}
	return out
}

// decodeParts parses a parts section (ErrCorrupt when it does not parse).
func decodeParts(b []byte) (*dumpParts, error) {
	if len(b) < 1+marksLen+4 || b[0] != partsFormat {
		return nil, corrupt("dump parts: unknown format")
	}
	var m [marksLen / 8]uint64
	for i := range m {
		m[i] = binary.BigEndian.Uint64(b[1+8*i:])
	}
	p := &dumpParts{marks: runtime.DumpMarks{Strings: m[0], Bytes: m[1], LongInts: m[2], Functions: m[3], EvalSources: m[4], Inputs: m[5], Names: m[6]}}
	n := binary.BigEndian.Uint32(b[1+marksLen:])
	b = b[1+marksLen+4:]
	if uint64(n) >= uint64(len(b))/9 {
		return nil, corrupt("dump parts: %d segments in %d bytes", n, len(b))
	}
	read := func() (segment, error) {
		if len(b) < 9 || b[0] > 1 {
			return segment{}, corrupt("dump parts: truncated, or an unknown encoding")
		}
		raw, size := binary.BigEndian.Uint32(b[1:]), binary.BigEndian.Uint32(b[5:])
		if uint64(size) > uint64(len(b)-9) {
			return segment{}, corrupt("dump parts: truncated")
		}
		s := segment{raw: int(raw), stored: b[9 : 9+size], compressed: b[0] == 1}
		if !s.compressed && s.raw != len(s.stored) {
			return segment{}, corrupt("dump parts: a segment of %d bytes declares %d", len(s.stored), s.raw)
		}
		b = b[9+size:]
		return s, nil
	}
	p.segments = make([]segment, n)
	for i := range p.segments {
		var err error
		if p.segments[i], err = read(); err != nil {
			return nil, err
		}
	}
	var err error
	if p.state, err = read(); err != nil {
		return nil, err
	}
	if len(b) != 0 {
		return nil, corrupt("dump parts: %d bytes after the state", len(b))
	}
	return p, nil
}
