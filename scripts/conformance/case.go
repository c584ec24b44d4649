package main

import (
	"strconv"
	"strings"

	"github.com/monty-go/monty/runtime/vfs"
)

// Reading monty's test_cases/*.py files, exactly as the native harness
// (scripts/native/src/case.rs) does: a `# /// monty` header block, and an
// expectation at the end of the file (`# Raise=`, `# Return=`,
// `# Return.str=`, `# Return.type=`, `# ref-counts=`, or a closing
// `"""\nTRACEBACK:\n...\n"""` string). Without one the case must not raise.

// expectKind says what a case checks.
type expectKind int

const (
	expectNoException expectKind = iota
	expectRaise                  // repr of the exception
	expectReturn                 // repr of the result
	expectReturnStr              // str of the result
	expectReturnType             // type name of the result
	expectRefCounts              // only monty's test build counts refs: the run must succeed
	expectTraceback              // the full formatted traceback
)

// caseConfig holds the header keys.
type caseConfig struct {
	CallExternal bool
	RunAsync     bool
	MountFS      bool
	XfailMonty   bool
	Timezone     string
	GCInterval   int
	Unknown      []string
}

// testCase is one parsed case file.
type testCase struct {
	Name     string // file name without .py, plus " [MODE]" for a mount variant
	FileName string // script name in tracebacks
	Code     string
	Kind     expectKind
	Want     string
	Config   caseConfig
	// Mount is how a mount-fs case mounts the fixture at /mnt: an overlay,
	// as natively and in monty's own harness, or a variant (see -mounts).
	Mount vfs.MountMode
	// Native names the native result the case is compared with: the
	// case's own for the overlay run, the overlay run's for a variant.
	Native string
}

const tracebackMarker = "\"\"\"\nTRACEBACK:\n"

// parseCase parses a case file.
func parseCase(fileName, content string) *testCase {
	c := &testCase{
		Name:     strings.TrimSuffix(fileName, ".py"),
		FileName: fileName,
		Config:   parseHeader(content),
		Mount:    vfs.MountOverlay,
	}
	c.Native = c.Name
	c.Code, c.Kind, c.Want = parseExpectation(content)
	return c
}

// lines splits like Rust's str::lines: on \n, dropping one trailing \r per
// line and a final empty line.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.Split(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	for i, l := range out {
		out[i] = strings.TrimSuffix(l, "\r")
	}
	return out
}

func parseExpectation(content string) (string, expectKind, string) {
	if pos := strings.Index(content, tracebackMarker); pos >= 0 {
		after := content[pos+len(tracebackMarker):]
		if end := strings.Index(after, "\n\"\"\""); end >= 0 {
			code := strings.TrimRightFunc(strings.Join(lines(content[:pos]), "\n"), isSpace)
			return code, expectTraceback, after[:end]
		}
	}
	ls := lines(content)
	if len(ls) == 0 {
		return "", expectNoException, ""
	}
	last := ls[len(ls)-1]
	for _, p := range []struct {
		prefix string
		kind   expectKind
	}{
		{"# ref-counts=", expectRefCounts},
		{"# Return.str=", expectReturnStr},
		{"# Return.type=", expectReturnType},
		{"# Return=", expectReturn},
		{"# Raise=", expectRaise},
	} {
		if want, ok := strings.CutPrefix(last, p.prefix); ok {
			return strings.Join(ls[:len(ls)-1], "\n"), p.kind, want
		}
	}
	return strings.Join(ls, "\n"), expectNoException, ""
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

func parseHeader(content string) caseConfig {
	var cfg caseConfig
	ls := lines(content)
	start := -1
	for i, l := range ls {
		if strings.TrimRight(l, " \t") == "# /// monty" {
			start = i
			break
		}
	}
	if start < 0 {
		return cfg
	}
	for _, l := range ls[start+1:] {
		l = strings.TrimRight(l, " \t")
		if l == "# ///" {
			break
		}
		body, ok := strings.CutPrefix(l, "#")
		if !ok {
			break
		}
		body = strings.TrimSpace(body)
		if body == "" || strings.HasPrefix(body, "#") {
			continue
		}
		key, value, ok := strings.Cut(body, "=")
		if !ok {
			cfg.Unknown = append(cfg.Unknown, body)
			continue
		}
		key = strings.TrimSpace(key)
		value = stripComment(strings.TrimSpace(value))
		switch key {
		case "call-external":
			cfg.CallExternal = value == "true"
		case "run-async":
			cfg.RunAsync = value == "true"
		case "mount-fs":
			cfg.MountFS = value == "true"
		case "xfail":
			cfg.XfailMonty = strings.Contains(value, "'monty'") || strings.Contains(value, `"monty"`)
		case "timezone":
			cfg.Timezone = strings.Trim(value, `'"`)
		case "gc-interval":
			cfg.GCInterval, _ = strconv.Atoi(value)
		case "skip-cpython-windows", "cpython-main-module":
			// Only the CPython side of monty's harness reads these.
		default:
			cfg.Unknown = append(cfg.Unknown, key)
		}
	}
	return cfg
}

// stripComment drops a trailing `# comment` outside quotes.
func stripComment(v string) string {
	var quote rune
	for i, c := range v {
		switch {
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && c == '#':
			return strings.TrimRight(v[:i], " \t")
		}
	}
	return v
}

// needsTestHooks says why a case needs a test build of monty (the
// test-hooks feature adds the gc module and sys.setrecursionlimit), or "".
// Neither the wasm module nor the native harness enables it, so such cases
// are skipped on both sides.
func needsTestHooks(code string) string {
	if strings.Contains(code, "setrecursionlimit(") {
		return "sys.setrecursionlimit"
	}
	for _, l := range lines(code) {
		l = strings.TrimLeft(l, " \t")
		if l == "import gc" || strings.HasPrefix(l, "import gc ") || strings.HasPrefix(l, "import gc,") || strings.HasPrefix(l, "from gc ") {
			return "the gc module"
		}
	}
	return ""
}

// shorten cuts long text for one-line reports (as the native harness does).
func shorten(s string) string {
	const max = 600
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !isRuneStart(s[end]) {
		end--
	}
	return s[:end] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
