package vfs

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
)

// scanEntry is one directory entry as a Path.scan answer describes it, with
// os.DirEntry's meaning: isDir and isFile follow a symlink, isSymlink does not.
type scanEntry struct {
	name                     string
	isDir, isFile, isSymlink bool
}

// maxScanEntries bounds the entries one Path.scan examines, so a huge tree
// or a symlink cycle with follow_symlinks cannot grow an unbounded answer.
// monty-fs allows 10 million visits but charges them to a mount memory
// limit; the Go mounts have no such limit, so the cap is lower.
const maxScanEntries = 1_000_000

// scan answers the Path.scan OS call behind os.scandir, os.walk, Path.walk,
// Path.glob and Path.rglob: the subtree under the call's path to its
// max_depth keyword (None: unlimited), descending into symlinked directories
// only with follow_symlinks. The answer is monty's tree reply, a list of
// (relative path, is_dir, is_file, is_symlink) tuples sorted by path, the
// root itself as "". The glob pattern keywords are a pruning hint only: the
// sandbox runs the pattern over the tree itself. A missing root raises;
// directories below it that cannot be listed read as empty.
func (m *mount) scan(call *runtime.OSCall, name, p string) (object.Value, error) {
	maxDepth := -1
	if v, ok := call.Kwarg("max_depth"); ok {
		if n, ok := v.(object.Int); ok && n >= 0 {
			maxDepth = int(min(n, maxPathDepth))
		}
	}
	follow := kwBool(call, "follow_symlinks")
	fi, err := m.fs.stat(name)
	if err != nil {
		return nil, err
	}
	out := []scanEntry{{name: "", isDir: fi.IsDir(), isFile: fi.Mode().IsRegular()}}
	type pending struct {
		rel   string
		depth int
	}
	stack := []pending{}
	if fi.IsDir() {
		stack = append(stack, pending{"", 0})
	}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if maxDepth >= 0 && d.depth >= maxDepth {
			continue
		}
		entries, err := m.fs.list(path.Join(name, d.rel))
		if err != nil {
			continue // unreadable below the root: empty, as CPython's walk and glob skip it
		}
		for _, e := range entries {
			if len(out) > maxScanEntries {
				return nil, &runtime.Exception{Type: "RuntimeError", Message: fmt.Sprintf("directory scan examined more than %d entries", maxScanEntries)}
			}
			e.name = path.Join(d.rel, e.name)
			out = append(out, e)
			// Paths past monty's limits could not be used in the sandbox
			// anyway; stopping there also ends symlink cycles.
			if e.isDir && (follow || !e.isSymlink) && checkPathLength(m.virtual(path.Join(name, e.name))) == nil {
				stack = append(stack, pending{e.name, d.depth + 1})
			}
		}
	}
	slices.SortFunc(out, func(a, b scanEntry) int { return strings.Compare(a.name, b.name) })
	reply := make(object.List, len(out))
	for i, e := range out {
		reply[i] = object.Tuple{object.Str(e.name), object.Bool(e.isDir), object.Bool(e.isFile), object.Bool(e.isSymlink)}
	}
	return reply, nil
}

// checkUTF8 raises the UnicodeDecodeError monty-fs raises for a text read
// of bytes that are not UTF-8, with CPython's wording.
func checkUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	start := 0
	for start < len(b) {
		r, size := utf8.DecodeRune(b[start:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		start += size
	}
	if start >= len(b) {
		return nil // not reached: utf8.Valid found an invalid sequence
	}
	n, complete := invalidUTF8Len(b[start:])
	reason := "invalid start byte"
	switch {
	case !complete:
		reason = "unexpected end of data"
		n = len(b) - start
	case b[start] >= 0xC2 && b[start] <= 0xF4:
		reason = "invalid continuation byte"
	}
	msg := fmt.Sprintf("'utf-8' codec can't decode byte 0x%02x in position %d: %s", b[start], start, reason)
	if n > 1 {
		msg = fmt.Sprintf("'utf-8' codec can't decode bytes in position %d-%d: %s", start, start+n-1, reason)
	}
	return &runtime.Exception{Type: "UnicodeDecodeError", Message: msg}
}

// invalidUTF8Len measures the invalid sequence at the start of b as Rust's
// Utf8Error::error_len does (the maximal prefix of a valid sequence), or
// reports that b ends inside a sequence that could still be valid.
func invalidUTF8Len(b []byte) (n int, complete bool) {
	lead := b[0]
	width := 0
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		width = 2
	case lead >= 0xE0 && lead <= 0xEF:
		width = 3
		switch lead {
		case 0xE0:
			lo = 0xA0
		case 0xED:
			hi = 0x9F
		}
	case lead >= 0xF0 && lead <= 0xF4:
		width = 4
		switch lead {
		case 0xF0:
			lo = 0x90
		case 0xF4:
			hi = 0x8F
		}
	default:
		return 1, true
	}
	for i := 1; i < width; i++ {
		if i >= len(b) {
			return 0, false
		}
		if b[i] < lo || b[i] > hi {
			return i, true
		}
		lo, hi = 0x80, 0xBF
	}
	return width, true // not reached for invalid input
}
