package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/monty-go/monty/object"
)

// Dump deltas: saving a REPL by what changed (docs/abi.md, "Dump deltas").
//
// Most of a long session's dump is parts that only ever grow: the interned
// strings, the compiled functions and the source of every snippet. A host
// that stores the parts it already has asks DumpDelta for what was added
// since (its Added) and for the rest of the state (its State), and rebuilds
// a whole dump with Engine.JoinDump when the REPL is to be loaded again.

// DumpMarks say how far a dump reached into a REPL's append-only parts. The
// zero value is "nothing stored yet".
type DumpMarks struct {
	Strings, Bytes, LongInts, Functions, EvalSources, Inputs, Names uint64
}

// Delta is one DumpDelta: what was added since the marks, the rest of the
// state, and the marks for the next delta.
type Delta struct {
	// Added holds the append-only parts added since the marks passed in, in
	// this package's framing (MergeAdded joins several; JoinDump reads them).
	Added []byte
	// State is the rest of the REPL's state: a Monty dump whose
	// append-only parts are empty.
	State []byte
	// Marks is what to pass to the next DumpDelta.
	Marks DumpMarks
}

// DumpDelta serialises an idle REPL as Dump does, except for the
// append-only parts that a dump reaching since already carried. Pass zero
// marks for a delta that holds everything. The delta is only meaningful
// with the Added parts of the deltas since zero marks of this same REPL
// lineage: a REPL loaded from a joined dump continues with the marks of
// its last delta.
func (r *REPL) DumpDelta(ctx context.Context, since DumpMarks) (*Delta, error) {
	if r.exec != nil {
		return nil, fmt.Errorf("%w: REPL is paused in a feed; a delta is only taken of an idle REPL (use Dump)", ErrBadState)
	}
	it := r.it
	w := &it.req
	w.Reset()
	w.Array(2)
	w.OptUint(uint64(max(it.limits.MaxMemory, 0)))
	w.Array(len(tables))
	for _, v := range since.list() {
		w.Uint(v)
	}
	rd, err := it.call(ctx, opDumpDelta, r.handle)
	if err != nil {
		return nil, err
	}
	if err := rd.ArrayOf(2); err != nil {
		return nil, err
	}
	payload, err := rd.Bytes()
	if err != nil {
		return nil, err
	}
	if err := rd.ArrayOf(len(tables)); err != nil {
		return nil, err
	}
	var m [len(tables)]uint64
	for i := range m {
		if m[i], err = rd.Uint(); err != nil {
			return nil, err
		}
	}
	added, state, err := splitDump(payload)
	if err != nil {
		return nil, fmt.Errorf("monty: unexpected dump delta from the module: %w", err)
	}
	return &Delta{Added: added, State: state, Marks: marksOf(m)}, nil
}

// list gives the marks in the order of tables.
func (m DumpMarks) list() [len(tables)]uint64 {
	return [len(tables)]uint64{m.Strings, m.Bytes, m.LongInts, m.Functions, m.EvalSources, m.Inputs, m.Names}
}

func marksOf(v [len(tables)]uint64) DumpMarks {
	return DumpMarks{Strings: v[0], Bytes: v[1], LongInts: v[2], Functions: v[3], EvalSources: v[4], Inputs: v[5], Names: v[6]}
}

// JoinDump rebuilds a whole REPL dump, which LoadREPL loads, from the Added
// parts of a lineage's deltas (in order, or merged by MergeAdded) and the
// State of the last one. A whole dump's State (no Added parts) works too.
// Bytes that are not such parts and state fail with ErrInvalidDump.
func (e *Engine) JoinDump(added [][]byte, state []byte) ([]byte, error) {
	parts, err := mergeAdded(added)
	if err != nil {
		return nil, err
	}
	payload, err := joinDump(parts, state)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidDump, err)
	}
	return e.envelope(kindREPL, payload), nil
}

// MergeAdded joins the Added parts of consecutive deltas, in order, into
// one that stands for all of them.
func MergeAdded(added ...[]byte) ([]byte, error) {
	parts, err := mergeAdded(added)
	if err != nil {
		return nil, err
	}
	return parts.encode(), nil
}

// GlobalMark is what a public global of a REPL holds, for a host that keeps
// a view of the globals between snippets (GlobalMarks).
type GlobalMark struct {
	// Slot is the global's place in the REPL's namespace: slots are only
	// ever added, in the order locals() lists the globals.
	Slot int
	// Name is the global's name (public: not starting with "_").
	Name string
	// Tag is GlobalCode for a function, class or module (never JSON
	// data), GlobalHeap for a value on the heap (which can change without
	// being rebound), GlobalGone for a slot no longer bound, and otherwise
	// the kind of a value held inline: the same Tag and Value mean the same
	// value.
	Tag uint8
	// Value identifies an inline value of its kind.
	Value uint64
}

// The GlobalMark tags that are not inline values.
const (
	GlobalCode = 0
	GlobalGone = 254
	GlobalHeap = 255
)

// Some tags of inline values, whose Value is the value itself: None (0),
// a bool (0 or 1), an int that fits in 64 bits (its two's complement).
// The other inline kinds (a float, an interned str, bytes or long int,
// Ellipsis, NotImplemented) have tags 4 to 9, and a Value that only tells
// equal values apart.
const (
	GlobalNone = 1
	GlobalBool = 2
	GlobalInt  = 3
)

// GlobalMarks lists, in slot order, the public globals of an idle REPL
// whose marks differ from what the previous call reported for this REPL,
// and every one on the heap. With reset (and on a REPL's first call) it
// lists every bound public global. A host that stops trusting what it kept
// passes reset.
func (r *REPL) GlobalMarks(ctx context.Context, reset bool) ([]GlobalMark, error) {
	if r.exec != nil {
		return nil, fmt.Errorf("%w: REPL is paused in a feed", ErrBadState)
	}
	r.it.req.Reset()
	r.it.req.Bool(reset)
	rd, err := r.it.call(ctx, opGlobalMarks, r.handle)
	if err != nil {
		return nil, err
	}
	n, err := rd.Array()
	if err != nil {
		return nil, err
	}
	marks := make([]GlobalMark, n)
	for i := range marks {
		if err := rd.ArrayOf(4); err != nil {
			return nil, err
		}
		m := &marks[i]
		slot, err := rd.Uint()
		if err != nil {
			return nil, err
		}
		if slot > 1<<16 {
			return nil, fmt.Errorf("monty: global slot %d out of range", slot)
		}
		m.Slot = int(slot)
		if m.Name, err = rd.Text(); err != nil {
			return nil, err
		}
		tag, err := rd.Uint()
		if err != nil {
			return nil, err
		}
		if tag > GlobalHeap {
			return nil, fmt.Errorf("monty: global %q: unknown mark %d", m.Name, tag)
		}
		m.Tag = uint8(tag)
		if m.Value, err = rd.Uint(); err != nil {
			return nil, err
		}
	}
	return marks, nil
}

// --- the CBOR surgery ----------------------------------------------------------

// A Monty dump is "MONTY\0", a u16 version, then one CBOR map. The
// append-only parts sit at fixed paths in it, under state.Idle: five arrays
// in interns, the map sources and the array global_names.slots.
const montyHeaderLen = 8

// table is an append-only part: where it is under state.Idle, and whether
// it is a map (its entries are key and value).
type table struct {
	in, key string
	isMap   bool
}

// tables are the append-only parts, in the order of the Added framing and
// of DumpMarks.
var tables = [...]table{
	{"interns", "strings", false},
	{"interns", "bytes", false},
	{"interns", "long_ints", false},
	{"interns", "functions", false},
	{"interns", "eval_sources", false},
	{"", "sources", true},
	{"global_names", "slots", false},
}

// addedVersion starts the Added framing: then, per table in tables
// order, uvarint entry count, uvarint byte length, the entries' CBOR.
const addedVersion = 1

type addedParts [len(tables)]struct {
	count   uint64
	entries []byte
}

func (p *addedParts) encode() []byte {
	n := 1
	for _, t := range p {
		n += 2*binary.MaxVarintLen64 + len(t.entries)
	}
	out := make([]byte, 0, n)
	out = append(out, addedVersion)
	for _, t := range p {
		out = binary.AppendUvarint(out, t.count)
		out = binary.AppendUvarint(out, uint64(len(t.entries)))
		out = append(out, t.entries...)
	}
	return out
}

func decodeAdded(b []byte) (*addedParts, error) {
	if len(b) == 0 || b[0] != addedVersion {
		return nil, fmt.Errorf("%w: not a dump delta's added parts", ErrInvalidDump)
	}
	b = b[1:]
	var p addedParts
	for i := range p {
		count, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("%w: added parts truncated", ErrInvalidDump)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: added parts truncated", ErrInvalidDump)
		}
		p[i].count, p[i].entries = count, b[n:n+int(size)]
		b = b[n+int(size):]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the added parts", ErrInvalidDump, len(b))
	}
	return &p, nil
}

func mergeAdded(added [][]byte) (*addedParts, error) {
	var out addedParts
	for _, b := range added {
		p, err := decodeAdded(b)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i].count += p[i].count
			out[i].entries = append(out[i].entries, p[i].entries...)
		}
	}
	return &out, nil
}

// span is a table's place in a dump: the container [start, end) and where
// its entries are within it.
type span struct {
	start, end            int
	entriesAt, entriesEnd int
	count                 uint64
}

// tableSpans finds the append-only tables in a Monty dump, in tables
// order. With whole, it first checks that the dump is one well-formed CBOR
// item (for bytes from storage; the module's own output is trusted).
func tableSpans(dump []byte, whole bool) ([len(tables)]span, error) {
	var spans [len(tables)]span
	if len(dump) < montyHeaderLen || string(dump[:6]) != "MONTY\x00" {
		return spans, errors.New("not a Monty dump")
	}
	c := cborScan{b: dump}
	if whole {
		if end, err := c.skip(montyHeaderLen, 0); err != nil || end != len(dump) {
			return spans, errors.New("not one whole CBOR item after the header")
		}
	}
	state, err := c.mapValue(montyHeaderLen, "state")
	if err != nil {
		return spans, err
	}
	idle, err := c.mapValue(state, "Idle")
	if err != nil {
		return spans, err
	}
	parents := map[string]int{"": idle}
	for i, tb := range tables {
		in, ok := parents[tb.in]
		if !ok {
			if in, err = c.mapValue(idle, tb.in); err != nil {
				return spans, err
			}
			parents[tb.in] = in
		}
		at, err := c.mapValue(in, tb.key)
		if err != nil {
			return spans, err
		}
		if spans[i], err = c.container(at, tb.major()); err != nil {
			return spans, fmt.Errorf("%s: %w", tb.key, err)
		}
	}
	return spans, nil
}

// splitDump takes the append-only tables out of a Monty dump: their
// entries become the Added framing, and the state keeps them empty.
func splitDump(dump []byte) (added, state []byte, err error) {
	spans, err := tableSpans(dump, false)
	if err != nil {
		return nil, nil, err
	}
	var p addedParts
	state = make([]byte, 0, len(dump))
	at := 0
	for _, i := range byOffset(spans) {
		s := spans[i]
		p[i].count, p[i].entries = s.count, dump[s.entriesAt:s.entriesEnd]
		state = append(state, dump[at:s.start]...)
		state = object.AppendCBORHead(state, tables[i].major(), 0)
		at = s.end
	}
	state = append(state, dump[at:]...)
	return p.encode(), state, nil
}

// joinDump puts the added entries in front of the state's own.
func joinDump(p *addedParts, state []byte) ([]byte, error) {
	spans, err := tableSpans(state, true)
	if err != nil {
		return nil, err
	}
	n := len(state)
	for _, t := range p {
		n += len(t.entries)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, i := range byOffset(spans) {
		s := spans[i]
		count := p[i].count + s.count
		entries := append(p[i].entries[:len(p[i].entries):len(p[i].entries)], state[s.entriesAt:s.entriesEnd]...)
		if tables[i].isMap {
			if count, entries, err = uniqueSources(count, entries); err != nil {
				return nil, err
			}
		}
		out = append(out, state[at:s.start]...)
		out = object.AppendCBORHead(out, tables[i].major(), count)
		out = append(out, entries...)
		at = s.end
	}
	return append(out, state[at:]...), nil
}

// uniqueSources keeps the last entry of each source name: a source that is
// not numbered as an input travels with every delta.
func uniqueSources(count uint64, entries []byte) (uint64, []byte, error) {
	c := cborScan{b: entries}
	type entry struct {
		key        string
		start, end int
	}
	list := make([]entry, 0, count)
	last := make(map[string]int, count)
	at := 0
	for range count {
		keyEnd, err := c.skip(at, 0)
		if err != nil {
			return 0, nil, err
		}
		end, err := c.skip(keyEnd, 0)
		if err != nil {
			return 0, nil, err
		}
		key := string(entries[at:keyEnd])
		last[key] = len(list)
		list = append(list, entry{key, at, end})
		at = end
	}
	if at != len(entries) {
		return 0, nil, errors.New("sources: bytes after the entries")
	}
	if len(last) == len(list) {
		return count, entries, nil
	}
	out := make([]byte, 0, len(entries))
	for i, e := range list {
		if last[e.key] == i {
			out = append(out, entries[e.start:e.end]...)
		}
	}
	return uint64(len(last)), out, nil
}

func (t table) major() byte {
	if t.isMap {
		return majorMap
	}
	return majorArray
}

// byOffset orders the tables by where they are in the dump.
func byOffset(spans [len(tables)]span) []int {
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
		for j := i; j > 0 && spans[order[j]].start < spans[order[j-1]].start; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order
}

const (
	majorUint  = 0
	majorBytes = 2
	majorText  = 3
	majorArray = 4
	majorMap   = 5
	majorTag   = 6
	majorOther = 7

	cborBreak       = 0xff
	cborIndefinite  = 31
	maxCBORNesting  = 1000
	errTruncatedMsg = "truncated CBOR"
)

// cborScan walks CBOR items without decoding them.
type cborScan struct{ b []byte }

// head reads the head at off: major type, argument (or -1 for an
// indefinite length) and where the item's content starts.
func (c *cborScan) head(off int) (major byte, arg uint64, indefinite bool, next int, err error) {
	if off >= len(c.b) {
		return 0, 0, false, 0, errors.New(errTruncatedMsg)
	}
	major, info := c.b[off]>>5, c.b[off]&0x1f
	off++
	switch {
	case info < 24:
		return major, uint64(info), false, off, nil
	case info <= 27:
		n := 1 << (info - 24)
		if off+n > len(c.b) {
			return 0, 0, false, 0, errors.New(errTruncatedMsg)
		}
		var v uint64
		for _, x := range c.b[off : off+n] {
			v = v<<8 | uint64(x)
		}
		return major, v, false, off + n, nil
	case info == cborIndefinite && major >= majorBytes && major <= majorMap:
		return major, 0, true, off, nil
	}
	return 0, 0, false, 0, fmt.Errorf("bad CBOR head 0x%02x", c.b[off-1])
}

// skip returns the offset past the item at off.
func (c *cborScan) skip(off, depth int) (int, error) {
	if depth > maxCBORNesting {
		return 0, errors.New("CBOR nested too deeply")
	}
	major, arg, indefinite, next, err := c.head(off)
	if err != nil {
		return 0, err
	}
	switch major {
	case majorUint, 1:
		return next, nil
	case majorOther:
		// Simple values and floats: the argument's bytes were the value.
		return next, nil
	case majorTag:
		return c.skip(next, depth+1)
	case majorBytes, majorText:
		if indefinite {
			return c.until(next, depth, 1)
		}
		if arg > uint64(len(c.b)-next) {
			return 0, errors.New(errTruncatedMsg)
		}
		return next + int(arg), nil
	}
	per := uint64(1)
	if major == majorMap {
		per = 2
	}
	if indefinite {
		return c.until(next, depth, int(per))
	}
	if arg > uint64(len(c.b)-next) {
		// Every item takes at least a byte.
		return 0, errors.New(errTruncatedMsg)
	}
	for range arg * per {
		if next, err = c.skip(next, depth+1); err != nil {
			return 0, err
		}
	}
	return next, nil
}

// until skips items (in groups of per) up to and past a break.
func (c *cborScan) until(off, depth, per int) (int, error) {
	for {
		if off >= len(c.b) {
			return 0, errors.New(errTruncatedMsg)
		}
		if c.b[off] == cborBreak {
			return off + 1, nil
		}
		var err error
		for range per {
			if off, err = c.skip(off, depth+1); err != nil {
				return 0, err
			}
		}
	}
}

// container describes the array or map at off.
func (c *cborScan) container(off int, major byte) (span, error) {
	got, arg, indefinite, next, err := c.head(off)
	if err != nil {
		return span{}, err
	}
	if got != major {
		return span{}, fmt.Errorf("CBOR major type %d where %d was expected", got, major)
	}
	per := 1
	if major == majorMap {
		per = 2
	}
	s := span{start: off, entriesAt: next}
	at := next
	for n := uint64(0); ; n++ {
		if indefinite {
			if at >= len(c.b) {
				return span{}, errors.New(errTruncatedMsg)
			}
			if c.b[at] == cborBreak {
				s.entriesEnd, s.end, s.count = at, at+1, n
				return s, nil
			}
		} else if n == arg {
			s.entriesEnd, s.end, s.count = at, at, n
			return s, nil
		}
		for range per {
			if at, err = c.skip(at, 1); err != nil {
				return span{}, err
			}
		}
	}
}

// mapValue finds key in the map at off and returns where its value starts.
func (c *cborScan) mapValue(off int, key string) (int, error) {
	major, arg, indefinite, at, err := c.head(off)
	if err != nil {
		return 0, err
	}
	if major != majorMap {
		return 0, fmt.Errorf("looking for %q: CBOR major type %d, not a map", key, major)
	}
	for n := uint64(0); indefinite || n < arg; n++ {
		if indefinite && at < len(c.b) && c.b[at] == cborBreak {
			break
		}
		kmajor, klen, kindef, kat, err := c.head(at)
		if err != nil {
			return 0, err
		}
		valueAt, err := c.skip(at, 1)
		if err != nil {
			return 0, err
		}
		if kmajor == majorText && !kindef && string(c.b[kat:kat+int(klen)]) == key {
			return valueAt, nil
		}
		if at, err = c.skip(valueAt, 1); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("no %q in the dump", key)
}
