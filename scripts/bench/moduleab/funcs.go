package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// wasmFunc describes one function defined in a module (imports excluded).
type wasmFunc struct {
	body     int   // bytes of its code entry
	locals   int   // declared locals, parameters excluded
	brTables []int // the number of targets of each of its br_tables
	machine  int   // bytes of machine code wazero made of it (perfmap builds)
	imported int   // imported functions before it: its index is imported + position
}

// opcodes is the number of Monty 1.4.0's bytecode opcodes (enum Opcode in
// src/bytecode/op.rs, 0 to 129).
const opcodes = 130

// dispatchLoop returns the position (among defined functions) of the
// interpreter's dispatch loop, Monty's VM::run, or -1: a stripped module has
// no names to find it by, but its `match opcode` compiles to a br_table with
// one target per opcode. Of the functions with such a table the largest is
// taken (a small helper could switch over opcodes too).
func dispatchLoop(fns []wasmFunc) int {
	best := -1
	for i, f := range fns {
		if slices.Contains(f.brTables, opcodes) && (best < 0 || f.body > fns[best].body) {
			best = i
		}
	}
	return best
}

// definedFuncs decodes the code section of a wasm module: for every defined
// function its size, its locals and the width of its largest br_table.
func definedFuncs(b []byte) ([]wasmFunc, error) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return nil, errors.New("not a wasm module")
	}
	imported := 0
	for i := 8; i < len(b); {
		id := b[i]
		n, k := binary.Uvarint(b[i+1:])
		if k <= 0 || i+1+k+int(n) > len(b) {
			return nil, errors.New("bad section header")
		}
		sec := &reader{b: b[i+1+k : i+1+k+int(n)]}
		i += 1 + k + int(n)
		switch id {
		case 2: // imports: functions among them shift the indices
			for range sec.u32() {
				sec.name()
				sec.name()
				switch kind := sec.byte(); kind {
				case 0:
					sec.u32()
					imported++
				case 1: // table: reftype, limits
					sec.byte()
					sec.limits()
				case 2:
					sec.limits()
				case 3: // global: valtype, mutability
					sec.byte()
					sec.byte()
				default:
					return nil, fmt.Errorf("import kind %d", kind)
				}
			}
		case 10:
			fns := make([]wasmFunc, sec.u32())
			for j := range fns {
				size := int(sec.u32())
				body := &reader{b: sec.take(size)}
				fns[j] = wasmFunc{body: size, imported: imported}
				for range body.u32() {
					fns[j].locals += int(body.u32())
					body.byte()
				}
				fns[j].brTables = body.brTables()
				if body.err != nil {
					return nil, fmt.Errorf("function %d: %w", imported+j, body.err)
				}
			}
			if sec.err != nil {
				return nil, sec.err
			}
			return fns, nil
		}
		if sec.err != nil {
			return nil, sec.err
		}
	}
	return nil, errors.New("no code section")
}

// reader decodes the parts of the wasm binary format definedFuncs needs; the
// first error sticks and every later read returns zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = errors.New("truncated or malformed " + what)
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail("byte")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) take(n int) []byte {
	if n > len(r.b) {
		r.fail("entry")
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

// u32 reads an unsigned LEB128; leb skips a signed or unsigned one.
func (r *reader) u32() uint32 {
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail("integer")
		return 0
	}
	r.b = r.b[k:]
	return uint32(v)
}

func (r *reader) leb() {
	for {
		if r.byte()&0x80 == 0 || r.err != nil {
			return
		}
	}
}

func (r *reader) name() { r.take(int(r.u32())) }

func (r *reader) limits() {
	if r.byte()&1 != 0 {
		r.u32()
	}
	r.u32()
}

// brTables walks a function body's instructions and returns the number of
// targets of each of its br_tables. It knows the immediates of the MVP and
// of the features Rust's wasm32-wasip1 target emits (sign extension,
// saturating conversion, bulk memory, reference types, multi-value).
func (r *reader) brTables() []int {
	var tables []int
	for len(r.b) > 0 && r.err == nil {
		switch op := r.byte(); {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if: block type
			if len(r.b) > 0 && (r.b[0] == 0x40 || r.b[0] >= 0x6f) { // empty or a value type
				r.byte()
			} else { // a type index, as a signed LEB128
				r.leb()
			}
		case op == 0x0c || op == 0x0d || op == 0x10 || (op >= 0x20 && op <= 0x26) || op == 0xd2:
			r.u32()
		case op == 0x0e: // br_table
			n := int(r.u32())
			for range n + 1 {
				r.u32()
			}
			tables = append(tables, n)
		case op == 0x11: // call_indirect: type, table
			r.u32()
			r.u32()
		case op == 0x1c: // select with types
			for range r.u32() {
				r.byte()
			}
		case op >= 0x28 && op <= 0x3e: // loads and stores: align, offset
			r.u32()
			r.u32()
		case op == 0x3f || op == 0x40 || op == 0xd0: // memory.size/grow, ref.null
			r.byte()
		case op == 0x41 || op == 0x42:
			r.leb()
		case op == 0x43:
			r.take(4)
		case op == 0x44:
			r.take(8)
		case op == 0xfc:
			switch sub := r.u32(); {
			case sub <= 7:
			case sub == 8: // memory.init: data, memory
				r.u32()
				r.byte()
			case sub == 10: // memory.copy
				r.byte()
				r.byte()
			case sub == 11: // memory.fill
				r.byte()
			case sub == 12 || sub == 14:
				r.u32()
				r.u32()
			case sub == 9 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
				r.u32()
			default:
				r.err = fmt.Errorf("unknown 0xfc %d instruction", sub)
			}
		case op == 0xfd || (op >= 0x06 && op <= 0x0a) || op == 0x1f:
			r.err = fmt.Errorf("unsupported instruction 0x%02x (SIMD or exceptions)", op)
		}
	}
	return tables
}
