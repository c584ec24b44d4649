// Command aotsplit splits a module that wasm2go translated into one Go
// package (module.go) into many small packages that the go command
// compiles in parallel, each in a fraction of the memory the whole needs
// (docs/building.md#the-ahead-of-time-engine). scripts/aot.sh runs it on
// both translations:
//
//	go run ./scripts/aotsplit -dir DIR -path IMPORTPATH [-budget BYTES] [-shared a.go,b.go]
//
// DIR holds wasm2go's module.go (package P, import path IMPORTPATH) and the
// files named by -shared (helpers that every package needs, such as the
// guard-page files of scripts/aot.sh). It rewrites DIR into:
//
//   - DIR/state: the Module's fields (exported, so that the other packages
//     reach them), its memory type and the host interfaces;
//   - DIR/partNN: the translated functions, in the module's order, in parts
//     of at most -budget bytes of source (a larger function has a part of
//     its own). A method fnN of Module becomes the function fnN(m, ...).
//     A call to a function in another part is a direct call through a
//     declaration without a body that //go:linkname binds to it, so parts
//     never import each other; small functions (-small) are copied into
//     each part that calls them instead (with the small functions they
//     call), so that they still inline;
//   - DIR/module.go: package P's API unchanged (Module, New, the exports,
//     the data segments), importing state and every part.
//
// Each package also gets a copy of the helpers wasm2go writes after the
// exports (load32, i32_rotl, memory_copy, ...) and of the -shared files.
// The output depends only on the input: the same module.go gives the same
// files, byte for byte.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("aotsplit: ")
	dir := flag.String("dir", "", "directory holding wasm2go's module.go")
	path := flag.String("path", "", "import path of the package in -dir")
	budget := flag.Int("budget", 2_000_000, "most bytes of source per part (a larger function has a part of its own)")
	shared := flag.String("shared", "", "comma-separated files of -dir to copy into every package")
	small := flag.Int("small", 1200, "functions of at most this many bytes of source are copied into each part that calls them")
	flag.Parse()
	if *dir == "" || *path == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	var sharedFiles []string
	if *shared != "" {
		sharedFiles = strings.Split(*shared, ",")
	}
	if err := run(*dir, *path, *budget, *small, sharedFiles); err != nil {
		log.Fatal(err)
	}
}

// run splits dir/module.go (see the package doc).
func run(dir, importPath string, budget, small int, shared []string) error {
	src, err := os.ReadFile(filepath.Join(dir, "module.go"))
	if err != nil {
		return err
	}
	m, err := parse(src, small)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "module.go"), err)
	}
	sharedSrc := map[string][]byte{}
	for _, name := range shared {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		sharedSrc[name] = b
	}
	files, err := m.split(importPath, budget)
	if err != nil {
		return err
	}
	// Every package but the root gets the shared files, under its name.
	pkgs := map[string]bool{}
	for name := range files {
		if d := filepath.Dir(name); d != "." {
			pkgs[d] = true
		}
	}
	for d := range pkgs {
		for name, b := range sharedSrc {
			files[filepath.Join(d, name)] = renamePackage(b, m.pkg, filepath.Base(d))
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// renamePackage replaces the package clause of a Go file.
func renamePackage(src []byte, from, to string) []byte {
	return bytes.Replace(src, []byte("\npackage "+from+"\n"), []byte("\npackage "+to+"\n"), 1)
}

// A module is wasm2go's translation of one wasm module.
type module struct {
	pkg     string
	header  string      // the file's leading comment
	decls   []decl      // top-level declarations other than functions, in order
	funcs   []*function // the translated functions, in order
	byIndex map[int]*function
	fields  []field // the Module struct's fields
}

// A decl is a top-level declaration, whole.
type decl struct {
	text string
	kind declKind
}

type declKind int

const (
	declModule    declKind = iota // type Module struct
	declNew                       // func New
	declMethod                    // an export, a method of Module
	declMemory                    // type wasmMemory and its methods
	declInterface                 // type Xname = interface, type Memory = interface
	declData                      // const dataN
	declHelper                    // everything else: helpers, constants
)

// A field of the Module struct.
type field struct{ name, typ string }

// exported is the name of a Module field in package state.
func (f field) exported() string {
	if strings.HasPrefix(f.name, "_") {
		return "X" + f.name
	}
	return strings.ToUpper(f.name[:1]) + f.name[1:]
}

// A function is one translated wasm function, fnN.
type function struct {
	index   int
	method  bool   // a method of Module (it uses the instance)
	params  string // the parameter list as written
	results string // the results as written, possibly empty
	body    string // everything after the header line
	calls   []int  // indexes of the functions it refers to, sorted, unique
	small   bool   // copied into each part that calls it (run's small)
	part    int    // the part that holds it
}

var (
	funcHeader = regexp.MustCompile(`^func (\(m \*Module\) )?fn([0-9]+)\(([^)]*)\)\s*(.*?)\s*\{$`)
	topLevel   = regexp.MustCompile(`^(func|type|var|const|import|package) `)
	// ref finds references to translated functions: m.fnN (a method) or
	// fnN (a function without the instance), then a call's parenthesis.
	ref = regexp.MustCompile(`\bm\.fn([0-9]+)\b(\(\)|\()?|\bfn([0-9]+)\b(\()?`)
	// dataConst starts a data segment's declaration.
	dataConst = regexp.MustCompile(`^const data[0-9]+ = `)
)

// parse splits wasm2go's output into declarations.
func parse(src []byte, small int) (*module, error) {
	m := &module{byIndex: map[int]*function{}}
	lines := strings.SplitAfter(string(src), "\n")
	var chunks []string
	// A declaration starts at a line of its own kind, or at the comments
	// before one; a line of code ends a run of comments.
	start, comments := -1, false
	for i, line := range lines {
		comment := strings.HasPrefix(line, "//") && i > 0 && isBlankOrClose(lines[i-1])
		if (topLevel.MatchString(line) && !comments) || comment {
			if start >= 0 {
				chunks = append(chunks, strings.Join(lines[start:i], ""))
			} else {
				m.header = strings.Join(lines[:i], "")
			}
			start = i
		}
		comments = comment || (comments && strings.HasPrefix(line, "//"))
	}
	if start < 0 {
		return nil, errors.New("no declarations")
	}
	chunks = append(chunks, strings.Join(lines[start:], ""))
	for _, c := range chunks {
		first := firstCode(c)
		switch {
		case strings.HasPrefix(first, "package "):
			m.pkg = strings.TrimSpace(strings.TrimPrefix(first, "package "))
		case strings.HasPrefix(first, "import "):
			// recomputed for every file written
		case funcHeader.MatchString(first):
			h := funcHeader.FindStringSubmatch(first)
			n, _ := strconv.Atoi(h[2])
			f := &function{index: n, method: h[1] != "", params: h[3], results: h[4], body: c[strings.Index(c, first)+len(first)+1:]}
			if m.byIndex[n] != nil {
				return nil, fmt.Errorf("fn%d declared twice", n)
			}
			m.byIndex[n] = f
			m.funcs = append(m.funcs, f)
		case strings.HasPrefix(first, "type Module struct {"):
			m.decls = append(m.decls, decl{c, declModule})
			fs, err := parseFields(c)
			if err != nil {
				return nil, err
			}
			m.fields = fs
		case strings.HasPrefix(first, "func New("):
			m.decls = append(m.decls, decl{c, declNew})
		case strings.HasPrefix(first, "func (m *Module) "):
			m.decls = append(m.decls, decl{c, declMethod})
		case strings.HasPrefix(first, "type wasmMemory ") || strings.HasPrefix(first, "func (m *wasmMemory) "):
			m.decls = append(m.decls, decl{c, declMemory})
		case strings.HasPrefix(first, "type ") && strings.Contains(first, " = interface {"):
			m.decls = append(m.decls, decl{c, declInterface})
		case dataConst.MatchString(first):
			m.decls = append(m.decls, decl{c, declData})
		case strings.HasPrefix(first, "func ") || strings.HasPrefix(first, "const ") || strings.HasPrefix(first, "var _ = "):
			m.decls = append(m.decls, decl{c, declHelper})
		default:
			return nil, fmt.Errorf("a declaration aotsplit does not know: %.80q", first)
		}
	}
	if m.pkg == "" || m.fields == nil {
		return nil, errors.New("not wasm2go's output: no package clause or no Module struct")
	}
	for _, f := range m.funcs {
		seen := map[int]bool{}
		for _, r := range ref.FindAllStringSubmatch(f.body, -1) {
			n, call := r[1], r[2] != ""
			if n == "" {
				n, call = r[3], r[4] != ""
			}
			k, _ := strconv.Atoi(n)
			g := m.byIndex[k]
			if g == nil {
				return nil, fmt.Errorf("fn%d refers to fn%s, which is not declared", f.index, n)
			}
			if !call {
				return nil, fmt.Errorf("fn%d refers to fn%d other than by a call: aotsplit only knows New to", f.index, k)
			}
			if !seen[k] {
				seen[k] = true
				f.calls = append(f.calls, k)
			}
		}
		sort.Ints(f.calls)
	}
	for _, f := range m.funcs {
		// Small enough that the compiler may inline it: a copy in each
		// part that calls it costs little and keeps it inlined there.
		f.small = len(f.body) <= small
	}
	return m, nil
}

// firstCode is the first line of a declaration after its comments.
func firstCode(c string) string {
	for _, line := range strings.Split(c, "\n") {
		if !strings.HasPrefix(line, "//") {
			return line
		}
	}
	return ""
}

func isBlankOrClose(line string) bool {
	return strings.TrimSpace(line) == "" || line == "}\n" || line == ")\n"
}

// parseFields reads the fields of type Module struct.
func parseFields(c string) ([]field, error) {
	var fs []field
	for _, line := range strings.Split(c, "\n")[1:] {
		line = strings.TrimSpace(line)
		if line == "}" || line == "" {
			continue
		}
		parts := strings.Fields(line)
		if len(parts) == 1 { // embedded
			fs = append(fs, field{parts[0], ""})
			continue
		}
		typ := parts[len(parts)-1]
		for _, name := range parts[:len(parts)-1] {
			fs = append(fs, field{strings.TrimSuffix(name, ","), typ})
		}
	}
	if len(fs) == 0 {
		return nil, errors.New("type Module struct has no fields")
	}
	return fs, nil
}

// fieldRef matches m.NAME for the Module's fields (and the memory's).
func (m *module) fieldRef() *regexp.Regexp {
	names := []string{"memory"}
	for _, f := range m.fields {
		names = append(names, regexp.QuoteMeta(f.name))
	}
	return regexp.MustCompile(`\bm\.(` + strings.Join(names, "|") + `)\b`)
}

// exportField is the exported name of a field or of the memory.
func (m *module) exportField(name string) string {
	if name == "memory" {
		return "Memory"
	}
	for _, f := range m.fields {
		if f.name == name {
			return f.exported()
		}
	}
	return name
}

// split assigns the functions to parts and writes every file, by path
// relative to the directory.
func (m *module) split(importPath string, budget int) (map[string][]byte, error) {
	part, size := 0, 0
	for _, f := range m.funcs {
		if size > 0 && size+len(f.body) > budget {
			part++
			size = 0
		}
		f.part = part
		size += len(f.body)
	}
	nparts := part + 1
	files := map[string][]byte{}
	fieldRef := m.fieldRef()
	helpers := m.helpers()

	// state: the Module's fields, exported.
	var st strings.Builder
	st.WriteString("type Module struct {\n")
	for _, f := range m.fields {
		st.WriteString(strings.TrimRight("\t"+f.exported()+" "+f.typ, " ") + "\n") // an embedded field has no type
	}
	st.WriteString("}\n\n")
	for _, d := range m.decls {
		switch d.kind {
		case declInterface:
			st.WriteString(d.text)
		case declMemory:
			t := strings.ReplaceAll(d.text, "wasmMemory", "WasmMemory")
			t = strings.Replace(t, "\tmemory []byte\n", "\tMemory []byte\n", 1)
			st.WriteString(fieldRef.ReplaceAllStringFunc(t, func(s string) string { return "m." + m.exportField(s[2:]) }))
		}
	}
	st.WriteString(helpers)
	stateDoc := "// Package state holds the state of one instance of the translated module: the\n" +
		"// fields of Module, which the functions of every part reach.\n"
	if err := writeGo(files, "state/module.go", m.header, stateDoc, "state", st.String(), "", nil); err != nil {
		return nil, err
	}

	partPath := func(p int) string { return fmt.Sprintf("part%02d", p) }
	statePath := importPath + "/state"
	for p := 0; p < nparts; p++ {
		var code strings.Builder
		need := map[int]bool{}   // called here, defined elsewhere, not copied
		copied := map[int]bool{} // small functions copied here, and what they call
		var own []*function
		var queue []int
		for _, f := range m.funcs {
			if f.part == p {
				own = append(own, f)
				queue = append(queue, f.calls...)
			}
		}
		for len(queue) > 0 {
			k := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			switch g := m.byIndex[k]; {
			case g.part == p || copied[k] || need[k]:
			case g.small:
				copied[k] = true
				queue = append(queue, g.calls...)
			default:
				need[k] = true
			}
		}
		var funcs strings.Builder
		for _, f := range own {
			funcs.WriteString(oneLine(m.function(f, fieldRef)))
		}
		for _, k := range sortedKeys(copied) {
			funcs.WriteString(oneLine(m.function(m.byIndex[k], fieldRef)))
		}
		code.WriteString(helpers)
		name := partPath(p)
		doc := fmt.Sprintf("// Package %s holds functions %d to %d of the translated module, each on a line\n// of its own.\n", name, own[0].index, own[len(own)-1].index)
		if err := writeGo(files, name+"/module.go", m.header, doc, name, code.String(), funcs.String(), []string{statePath}); err != nil {
			return nil, err
		}
		if len(need) > 0 {
			if err := writeGo(files, name+"/links.go", m.header, "", name, m.links(need, "m *state.Module", importPath, partPath), "", []string{statePath}); err != nil {
				return nil, err
			}
		}
	}

	// The root: the API, New and the exports, the data.
	var root strings.Builder
	need := map[int]bool{}
	root.WriteString("// Module is one instance of the translated module.\ntype Module struct {\n\tstate.Module\n}\n\n")
	for _, d := range m.decls {
		switch d.kind {
		case declModule, declMemory:
			continue
		case declNew:
			text, segments, err := m.elementSegments(d.text)
			if err != nil {
				return nil, err
			}
			root.WriteString(m.rootCode(text, fieldRef, need))
			root.WriteString(m.rootCode(segments, fieldRef, need))
		case declMethod:
			root.WriteString(m.rootCode(d.text, fieldRef, need))
		default:
			root.WriteString(d.text)
		}
	}
	rootImports := []string{statePath}
	for p := 0; p < nparts; p++ {
		rootImports = append(rootImports, "_ "+strconv.Quote(importPath+"/"+partPath(p)))
	}
	if err := writeGo(files, "module.go", m.header, "", m.pkg, root.String(), "", rootImports); err != nil {
		return nil, err
	}
	if len(need) > 0 {
		if err := writeGo(files, "links.go", m.header, "", m.pkg, m.links(need, "m *state.Module", importPath, partPath), "", []string{statePath}); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// helpers are the declarations every package copies: wasm2go's helper
// functions and constants.
func (m *module) helpers() string {
	var b strings.Builder
	for _, d := range m.decls {
		if d.kind == declHelper {
			b.WriteString(d.text)
		}
	}
	return b.String()
}

// function writes f as a function of a part.
func (m *module) function(f *function, fieldRef *regexp.Regexp) string {
	var b strings.Builder
	params := f.params
	if f.method {
		params = "m *state.Module"
		if f.params != "" {
			params += ", " + f.params
		}
	}
	fmt.Fprintf(&b, "func fn%d(%s)", f.index, params)
	if f.results != "" {
		b.WriteString(" " + f.results)
	}
	b.WriteString(" {\n")
	body := ref.ReplaceAllStringFunc(f.body, func(s string) string {
		switch {
		case strings.HasSuffix(s, "()") && strings.HasPrefix(s, "m."):
			return s[2:len(s)-1] + "m)"
		case strings.HasPrefix(s, "m."):
			return s[2:] + "m, "
		}
		return s
	})
	body = fieldRef.ReplaceAllStringFunc(body, func(s string) string { return "m." + m.exportField(s[2:]) })
	b.WriteString(body)
	return b.String()
}

// rootCode rewrites New or an export: calls of translated functions go to
// their parts (noted in need), method values become closures.
func (m *module) rootCode(text string, fieldRef *regexp.Regexp, need map[int]bool) string {
	first, rest, _ := strings.Cut(text, "\n")
	rest = ref.ReplaceAllStringFunc(rest, func(s string) string {
		r := ref.FindStringSubmatch(s)
		n := r[1]
		if n == "" {
			n = r[3]
		}
		k, _ := strconv.Atoi(n)
		f := m.byIndex[k]
		need[k] = true
		switch {
		case strings.HasSuffix(s, "()") && strings.HasPrefix(s, "m."):
			return s[2:len(s)-1] + "&m.Module)"
		case strings.HasSuffix(s, "(") && strings.HasPrefix(s, "m."):
			return s[2:] + "&m.Module, "
		case strings.HasPrefix(s, "m."):
			// A method value (the element table): a closure over m.
			args := paramNames(f.params)
			call := fmt.Sprintf("fn%d(&m.Module", k)
			if args != "" {
				call += ", " + args
			}
			call += ")"
			if f.results != "" {
				call = "return " + call
			}
			res := ""
			if f.results != "" {
				res = " " + f.results
			}
			return fmt.Sprintf("func(%s)%s { %s }", f.params, res, call)
		}
		return s
	})
	rest = fieldRef.ReplaceAllStringFunc(rest, func(s string) string { return "m." + m.exportField(s[2:]) })
	return first + "\n" + rest
}

// elementsLine is New's initialisation of the element segments.
var elementsLine = regexp.MustCompile(`(?m)^\tm\.elements = \[\]\[\]any\{(.*)\}$`)

// segmentChunk is how many elements one function of elementSegments
// makes: a function making thousands of closures takes the compiler
// gigabytes.
const segmentChunk = 256

// elementSegments moves the element segments out of New (text) into
// methods that each make at most segmentChunk of them, and returns New
// calling those, and the methods.
func (m *module) elementSegments(text string) (string, string, error) {
	loc := elementsLine.FindStringSubmatchIndex(text)
	if loc == nil {
		return text, "", nil
	}
	list := text[loc[2]:loc[3]]
	var segs [][]string
	for _, seg := range strings.Split(list, "}, {") {
		seg = strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}")
		if strings.ContainsAny(seg, "{}()") {
			return "", "", fmt.Errorf("an element segment aotsplit cannot read: %.80q", seg)
		}
		segs = append(segs, strings.Split(seg, ", "))
	}
	var calls []string
	var b strings.Builder
	for i, seg := range segs {
		calls = append(calls, fmt.Sprintf("m.segment%d()", i))
		fmt.Fprintf(&b, "\n// segment%d returns element segment %d.\nfunc (m *Module) segment%d() []any {\n\te := make([]any, 0, %d)\n", i, i, i, len(seg))
		for k := 0; k < len(seg); k += segmentChunk {
			fmt.Fprintf(&b, "\te = m.segment%d_%d(e)\n", i, k/segmentChunk)
		}
		b.WriteString("\treturn e\n}\n")
		for k := 0; k < len(seg); k += segmentChunk {
			fmt.Fprintf(&b, "\nfunc (m *Module) segment%d_%d(e []any) []any {\n\treturn append(e, %s)\n}\n",
				i, k/segmentChunk, strings.Join(seg[k:min(k+segmentChunk, len(seg))], ", "))
		}
	}
	newText := text[:loc[0]] + "\tm.elements = [][]any{" + strings.Join(calls, ", ") + "}" + text[loc[1]:]
	return newText, b.String(), nil
}

// paramNames lists the names of a parameter list: "v0, v1 int32, v2 int64"
// gives "v0, v1, v2".
func paramNames(params string) string {
	var names []string
	for _, p := range strings.Split(params, ",") {
		if f := strings.Fields(p); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return strings.Join(names, ", ")
}

// links declares the functions of need, defined in other parts, without a
// body: //go:linkname binds each to its definition, so that no part
// imports another.
func (m *module) links(need map[int]bool, receiver, importPath string, partPath func(int) string) string {
	var b strings.Builder
	for _, k := range sortedKeys(need) {
		f := m.byIndex[k]
		params := f.params
		if f.method {
			params = receiver
			if f.params != "" {
				params += ", " + f.params
			}
		}
		fmt.Fprintf(&b, "//go:linkname fn%d %s/%s.fn%d\nfunc fn%d(%s)", k, importPath, partPath(f.part), k, k, params)
		if f.results != "" {
			b.WriteString(" " + f.results)
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

func sortedKeys(s map[int]bool) []int {
	keys := make([]int, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// stdImports are the packages wasm2go's output may use.
var stdImports = []string{"encoding/binary", "math", "math/bits", "runtime", "syscall", "unsafe"}

// writeGo writes a Go file of package pkg: header, doc, the package
// clause, the imports code and raw use (and extra, import specs or paths),
// code, formatted, then raw as it is.
func writeGo(files map[string][]byte, name, header, doc, pkg, code, raw string, extra []string) error {
	var b strings.Builder
	b.WriteString(strings.Replace(header, ". DO NOT EDIT.", " (split by scripts/aotsplit). DO NOT EDIT.", 1))
	b.WriteString(doc)
	b.WriteString("package " + pkg + "\n\nimport (\n")
	links := strings.Contains(code, "//go:linkname ")
	for _, imp := range stdImports {
		short := imp[strings.LastIndex(imp, "/")+1:]
		used := regexp.MustCompile(`(^|[^A-Za-z0-9_.])` + short + `\.`)
		if used.MatchString(code) || used.MatchString(raw) {
			fmt.Fprintf(&b, "\t%q\n", imp)
		} else if imp == "unsafe" && links {
			b.WriteString("\t_ \"unsafe\"\n")
		}
	}
	for _, imp := range extra {
		short := imp[strings.LastIndex(imp, "/")+1:]
		switch {
		case strings.HasPrefix(imp, "_ "):
			b.WriteString("\t" + imp + "\n")
		case strings.Contains(code, short+".") || strings.Contains(raw, short+"."):
			fmt.Fprintf(&b, "\t%q\n", imp)
		}
	}
	b.WriteString(")\n\n")
	b.WriteString(code)
	out, err := format.Source([]byte(b.String()))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if raw != "" {
		out = append(append(out, '\n'), raw...)
	}
	files[name] = out
	return nil
}

// oneLine puts a function on one line, with the semicolons Go would insert
// at the ends of its lines (go.dev/ref/spec#Semicolons), so that all its
// code has one line number: the table of line numbers, which the binary
// carries for every function, then takes a few bytes per function instead
// of an entry for every change of line (for both translations, 10 MB of a
// 130 MB binary). Nothing reads those lines (a trap's traceback names the
// wasm function). A function with a comment or a raw string is left as it
// is.
func oneLine(fn string) string {
	if strings.Contains(fn, "//") || strings.Contains(fn, "`") {
		return fn
	}
	lines := strings.Split(strings.TrimSuffix(fn, "\n"), "\n")
	var b strings.Builder
	b.Grow(len(fn))
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		b.WriteString(t)
		switch {
		case i == len(lines)-1:
		case endsStatement(t):
			b.WriteString("; ")
		default:
			b.WriteString(" ")
		}
	}
	b.WriteString("\n")
	return b.String()
}

// endsStatement reports whether Go inserts a semicolon after line: its
// last token is an identifier, a literal, one of the keywords break,
// continue, fallthrough and return, ++, --, ), ] or }.
func endsStatement(line string) bool {
	isWord := func(r rune) bool {
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	c := rune(line[len(line)-1])
	switch {
	case c == ')' || c == ']' || c == '}' || c == '"' || c == '\'':
		return true
	case strings.HasSuffix(line, "++") || strings.HasSuffix(line, "--"):
		return true
	case isWord(c):
		switch word := line[strings.LastIndexFunc(line, func(r rune) bool { return !isWord(r) })+1:]; word {
		case "break", "continue", "fallthrough", "return":
			return true
		case "case", "chan", "const", "default", "defer", "else", "for", "func", "go", "goto", "if",
			"import", "interface", "map", "package", "range", "select", "struct", "switch", "type", "var":
			return false
		}
		return true
	}
	return false
}
