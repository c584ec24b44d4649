package agent

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/tools"
)

// DefaultBriefingBudget is the size, in estimated tokens, past which the
// execute_python description lists the host functions by name instead of
// as stubs (ExecutorOptions.BriefingBudget).
const DefaultBriefingBudget = 2000

// feature is one claim the briefing makes about the Python that Monty
// runs. The briefing's text about the language is generated from the
// features, and the tests run every proof through an executor: a proof of
// a feature that works must run without an exception, one of a feature
// that does not must raise the exception it names. So the text cannot
// promise what the interpreter does not do, nor warn about what it does.
type feature struct {
	text   string
	works  bool
	proofs []proof
}

// proof is code that shows a feature: it runs without an exception when
// the feature works, and raises the Python exception raises when it does
// not.
type proof struct {
	code   string
	raises string
}

// Standard modules Monty (1.4.0) has: its StandardLib, os.path included.
var stdlibModules = []string{
	"asyncio", "base64", "binascii", "bisect", "collections", "copy", "csv", "dataclasses",
	"datetime", "decimal", "functools", "hashlib", "itertools", "json", "math", "os", "os.path",
	"pathlib", "random", "re", "sys", "time", "tomllib", "typing", "unicodedata",
}

// Modules that are not there, named in the briefing: standard ones a model
// is likely to reach for, and common third-party packages.
var (
	missingStdlib  = []string{"enum", "io", "string", "statistics", "subprocess", "socket", "threading"}
	missingPackage = []string{"numpy", "pandas", "requests"}
)

// features is what the briefing says about the language, in its order.
var features = []feature{
	{works: true, text: "functions: defaults, *args/**kwargs, keyword-only parameters, lambdas, closures, global/nonlocal, decorators", proofs: []proof{{code: `
def deco(f):
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs) + 1
    return wrapper
@deco
def f(a, b=1, *rest, c=0, **kw):
    return a + b + c + len(rest) + len(kw)
n = 0
def counter():
    c = 0
    def inc():
        nonlocal c
        global n
        c += 1
        n += 1
        return c
    return inc
inc = counter()
inc()
assert f(1, 2, 3, c=4, d=5) == 10 and f(1) == 3 and inc() == 2 and n == 2
assert (lambda x: x * 2)(3) == 6`}}},
	{works: true, text: "classes without a base class: __init__, methods, class attributes, __repr__, __eq__, __add__, __getitem__, __iter__, __call__", proofs: []proof{{code: `
class V:
    dims = 2
    def __init__(self, x, y):
        self.x, self.y = x, y
    def norm1(self):
        return abs(self.x) + abs(self.y)
    def __repr__(self):
        return f"V({self.x}, {self.y})"
    def __str__(self):
        return "v"
    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)
    def __add__(self, other):
        return V(self.x + other.x, self.y + other.y)
    def __getitem__(self, i):
        return (self.x, self.y)[i]
    def __iter__(self):
        return iter([self.x, self.y])
    def __contains__(self, v):
        return v in (self.x, self.y)
    def __call__(self, k):
        return V(self.x * k, self.y * k)
v = V(1, -2) + V(1, 0)
assert v == V(2, -2) and v.norm1() == 4 and repr(v) == "V(2, -2)" and str(v) == "v" and V.dims == 2
assert v[1] == -2 and list(v) == [2, -2] and 2 in v and v(2) == V(4, -4) and isinstance(v, V)`}}},
	{works: true, text: "@dataclass, with field(default_factory=...), frozen=True and __post_init__", proofs: []proof{{code: `
from dataclasses import dataclass, field
@dataclass
class P:
    x: int
    tags: list = field(default_factory=list)
    def __post_init__(self):
        self.x *= 2
@dataclass(frozen=True)
class Q:
    y: int = 0
assert P(1) == P(1, []) and P(1).x == 2 and repr(Q()) == "Q(y=0)"`}}},
	{works: true, text: "list, dict and set comprehensions, generator expressions", proofs: []proof{{code: `
assert [x * x for x in range(4) if x] == [1, 4, 9]
assert {k: v for k, v in [("a", 1)]} == {"a": 1} and {x % 2 for x in range(5)} == {0, 1}
assert sum(x for x in range(4)) == 6 and [[i * j for j in range(2)] for i in range(2)] == [[0, 0], [0, 1]]`}}},
	{works: true, text: "f-strings, str.format() and % formatting; the common str, list, dict and set methods", proofs: []proof{{code: `
x = 3.14159
assert f"{x:.2f}|{'a':>3}|{1234567:,}" == "3.14|  a|1,234,567" and "{}-{k}".format(1, k=2) == "1-2" and "%s=%05.1f" % ("x", x) == "x=003.1"
assert "a,b".split(",") == ["a", "b"] and " x ".strip().upper() == "X" and "-".join("ab") == "a-b" and "ab".replace("b", "c").startswith("a")
l = [3, 1, 2]
l.append(0)
l.sort(key=lambda n: -n)
d = {"a": 1}
d.setdefault("b", []).append(1)
s = {1, 2}
s.add(3)
assert l == [3, 2, 1, 0] and l.pop() == 0 and d.get("z", 0) == 0 and list(d.items())[1] == ("b", [1]) and s & {3, 4} == {3}`}}},
	{works: true, text: "integers of any size", proofs: []proof{{code: `assert len(str(2 ** 1000)) == 302`}}},
	{works: true, text: "try/except/else/finally, raise ... from, assert; with and your own context managers", proofs: []proof{{code: `
class CM:
    def __enter__(self):
        return "in"
    def __exit__(self, et, ev, tb):
        return True
with CM() as v:
    raise ValueError("suppressed")
try:
    try:
        1 / 0
    except (ZeroDivisionError, KeyError) as e:
        raise RuntimeError("wrapped") from e
    else:
        pass
except RuntimeError as e:
    msg = str(e)
finally:
    done = True
assert v == "in" and msg == "wrapped" and done`}}},
	{works: true, text: "match statements, :=, * and ** unpacking", proofs: []proof{{code: `
match {"type": "pt", "xy": [1, 2]}:
    case {"type": "pt", "xy": [x, y]}:
        r = x + y
    case _:
        r = 0
first, *rest = [1, 2, 3]
def f(*a, **k):
    return len(a) + len(k)
assert r == 3 and (n := len(rest)) == 2 and f(*rest, **{"k": 1}) == 3 and [*rest, *rest] == [2, 3, 2, 3] and {**{"a": 1}, "b": 2} == {"a": 1, "b": 2}`}}},
	{works: true, text: "async def and await (also at the top level), asyncio.gather(), asyncio.run()", proofs: []proof{{code: `
import asyncio
async def double(x):
    await asyncio.sleep(0)
    return x * 2
assert await double(1) == 2 and await asyncio.gather(double(1), double(2)) == [2, 4] and asyncio.run(double(3)) == 6`}}},
	{works: true, text: "type annotations; from typing import Any, Optional, Union, Callable, Literal, Protocol, TypeVar", proofs: []proof{{code: `
from typing import Any, Optional, Union, Callable, Literal, Protocol, TypeVar
def f(x: Optional[int] = None, *, y: list[dict[str, Any]] | None = None) -> int:
    return x or 0
z: Union[int, str] = f(1)
assert z == 1`}}},
	{works: true, text: "import " + strings.Join(stdlibModules, ", ") + "; collections has Counter, defaultdict, deque and namedtuple", proofs: []proof{
		{code: "import " + strings.Join(stdlibModules, ", ")},
		{code: `
import collections, datetime, json, math, re
c = collections.Counter("abca")
d = collections.defaultdict(list)
d["k"].append(1)
Pt = collections.namedtuple("Pt", "x y")
q = collections.deque([1])
q.appendleft(0)
assert c.most_common(1) == [("a", 2)] and d["k"] == [1] and Pt(1, 2).y == 2 and list(q) == [0, 1]
assert json.loads(json.dumps({"a": [1]})) == {"a": [1]} and re.findall(r"\d+", "a1b22") == ["1", "22"] and math.sqrt(16) == 4
assert str(datetime.date(2024, 1, 31) + datetime.timedelta(days=1)) == "2024-02-01"`},
	}},

	{works: false, text: "class inheritance, including your own exception classes: raise built-in exceptions (ValueError, ...)", proofs: []proof{
		{code: "class A:\n    pass\nclass B(A):\n    pass", raises: "NotImplementedError"},
		{code: "class MyError(Exception):\n    pass", raises: "NotImplementedError"},
	}},
	{works: false, text: "yield (generator functions): build lists, or use generator expressions", proofs: []proof{
		{code: "def g():\n    yield 1", raises: "NotImplementedError"},
	}},
	{works: false, text: "@property, @staticmethod, @classmethod", proofs: []proof{
		{code: "class A:\n    @property\n    def x(self):\n        return 1", raises: "NotImplementedError"},
		{code: "class A:\n    @staticmethod\n    def x():\n        return 1", raises: "NotImplementedError"},
		{code: "class A:\n    @classmethod\n    def x(cls):\n        return 1", raises: "NotImplementedError"},
	}},
	{works: false, text: "the del statement: use dict.pop(), list.pop()", proofs: []proof{
		{code: "d = {'a': 1}\ndel d['a']", raises: "NotImplementedError"},
	}},
	{works: false, text: "async for, async with", proofs: []proof{
		{code: "async def f(xs):\n    async for x in xs:\n        pass", raises: "NotImplementedError"},
		{code: "async def f(cm):\n    async with cm:\n        pass", raises: "NotImplementedError"},
	}},
	{works: false, text: "len() and < on your own objects (__len__ and __lt__ are not used): sort with key=", proofs: []proof{
		{code: "class A:\n    def __len__(self):\n        return 0\nlen(A())", raises: "TypeError"},
		{code: "class A:\n    def __lt__(self, other):\n        return True\nsorted([A(), A()])", raises: "TypeError"},
	}},
	{works: false, text: "some names of those modules, such as collections.OrderedDict, dataclasses.asdict, typing.TypedDict", proofs: []proof{
		{code: "import collections\ncollections.OrderedDict()", raises: "AttributeError"},
		{code: "from dataclasses import asdict", raises: "ImportError"},
		{code: "from typing import TypedDict", raises: "ImportError"},
	}},
	missingModules(),
	{works: false, text: "input(), sys.exit()", proofs: []proof{
		{code: "input()", raises: "NameError"},
		{code: "import sys\nsys.exit(0)", raises: "AttributeError"},
	}},
}

// missingModules is the feature saying which modules are not there, each
// proved by its import.
func missingModules() feature {
	f := feature{text: "other modules, such as " + strings.Join(missingStdlib, ", ") +
		", and third-party packages (" + strings.Join(missingPackage, ", ") + ")"}
	for _, m := range slices.Concat(missingStdlib, missingPackage) {
		f.proofs = append(f.proofs, proof{code: "import " + m, raises: "ModuleNotFoundError"})
	}
	return f
}

// briefing is the configuration the execute_python description tells the
// model about; the description is a function of it and of the registry.
type briefing struct {
	// callResults: the result shows each host call's result.
	callResults bool
	// timeout bounds a call's wall time (0: none); limits are the
	// sessions' limits, defaults applied.
	timeout time.Duration
	limits  runtime.Limits
	// hostCalls bounds the host calls of a call (0: none); hostTime
	// their total time (0: none).
	hostCalls int
	hostTime  time.Duration
	// The sessions' persistence options.
	ephemeral, jsonOnly, captureOnError bool
	// files is the sessions' /work (nil: none); maxState caps their
	// stored state (0: session.DefaultMaxStateSize).
	files    *session.Files
	maxState int64
	// mounts are the directories the OS handler serves, sorted by guest
	// path; denyFS: no other path can be opened (no OS handler, or the
	// mounts describe it).
	mounts []vfs.MountSpec
	denyFS bool
	// budget is the description's size past which the functions are
	// listed by name (estimated tokens; 0: no limit).
	budget int
}

// newBriefing returns the briefing of an executor with opts, whose
// sessions have the limits and timeout given (defaults applied).
func newBriefing(opts ExecutorOptions, limits runtime.Limits, timeout time.Duration) briefing {
	b := briefing{
		callResults:    !opts.OmitCallResults,
		limits:         limits,
		hostTime:       max(limits.MaxHostTime, 0),
		ephemeral:      opts.Session.Ephemeral,
		jsonOnly:       opts.Session.JSONOnly,
		captureOnError: opts.Session.CaptureOnError,
		files:          opts.Session.Files,
		maxState:       opts.Session.MaxStateSize,
		mounts:         slices.Clone(opts.Mounts),
		denyFS:         opts.OS == nil || len(opts.Mounts) > 0,
		budget:         cmp.Or(opts.BriefingBudget, DefaultBriefingBudget),
	}
	slices.SortStableFunc(b.mounts, func(x, y vfs.MountSpec) int { return strings.Compare(x.Guest, y.Guest) })
	if timeout > 0 {
		b.timeout = timeout
	}
	if d := limits.MaxDuration; d > 0 && (b.timeout == 0 || d < b.timeout) {
		b.timeout = d
	}
	switch {
	case limits.MaxHostCalls == 0:
		b.hostCalls = runtime.DefaultMaxHostCalls
	case limits.MaxHostCalls > 0:
		b.hostCalls = limits.MaxHostCalls
	}
	if b.budget < 0 {
		b.budget = 0
	}
	return b
}

// description is the execute_python tool's description: what the tool
// returns, the Python it runs, what persists, the limits, the files, and
// what the code can call (r's functions, classes, MCP namespaces and
// globals). When the whole would pass the budget, the callables are listed
// by name only, or, if that is still too long, counted by category.
func (b briefing) description(r *tools.Registry) string {
	c := callablesOf(r)
	head := b.head(!c.empty())
	if c.empty() {
		return head
	}
	text := head + "\n\n" + c.stubs()
	if b.budget > 0 && estimateTokens(text) > b.budget {
		text = head + "\n\n" + c.names()
		if estimateTokens(text) > b.budget {
			text = head + "\n\n" + c.counts()
		}
	}
	return text
}

// head is the description without the callables; hostCalls says whether
// there are any (and so a limit on calling them to tell).
func (b briefing) head(hostCalls bool) string {
	var s strings.Builder
	s.WriteString("Execute Python code in a sandboxed interpreter (Monty: a subset of Python 3, no network or subprocesses). " +
		"Returns what the code prints, then the repr of the last expression's value unless it is None, or the Python traceback if the code raised.")
	if b.callResults {
		s.WriteString(" The result also shows what each host function call returned.")
	}
	s.WriteString("\n\nWorks:")
	for _, f := range features {
		if f.works {
			s.WriteString("\n- " + f.text)
		}
	}
	s.WriteString("\nDoes not work:")
	for _, f := range features {
		if !f.works {
			s.WriteString("\n- " + f.text)
		}
	}
	s.WriteString("\n\n" + b.persistence())
	s.WriteString("\n" + b.limitsText(hostCalls))
	if f := b.filesText(); f != "" {
		s.WriteString("\n" + f)
	}
	return s.String()
}

// persistence says what survives from one call to the next.
func (b briefing) persistence() string {
	var what string
	switch {
	case b.ephemeral:
		return "Nothing persists: every call starts with no variables."
	case b.jsonOnly:
		what = "Only global variables holding JSON data (dict, list, str, int, float, bool, None) persist between calls of a session; define functions, classes and imports again in each call."
	default:
		what = "Variables, functions, classes and imports persist between calls of a session."
	}
	if b.captureOnError {
		return what + " A call that raises keeps what it changed before the exception; one stopped by a limit changes nothing."
	}
	return what + " A call that raises or is stopped by a limit changes nothing: the session stays as before the call."
}

// limitsText lists the limits of a call, the host calls' when hostCalls.
func (b briefing) limitsText(hostCalls bool) string {
	var parts []string
	if b.timeout > 0 {
		parts = append(parts, b.timeout.String()+" of run time (host calls included)")
	}
	if m := b.limits.MaxMemory; m > 0 {
		parts = append(parts, runtime.ByteSize(m)+" of memory")
	}
	if o := cmp.Or(b.limits.MaxOutput, runtime.DefaultMaxOutput); o > 0 {
		parts = append(parts, runtime.ByteSize(int64(o))+" of print output")
	}
	parts = append(parts, "recursion depth "+strconv.Itoa(cmp.Or(b.limits.MaxRecursion, runtime.DefaultMaxRecursion)))
	if b.hostCalls > 0 && hostCalls {
		parts = append(parts, strconv.Itoa(b.hostCalls)+" host function calls")
	}
	if b.hostTime > 0 && hostCalls {
		parts = append(parts, b.hostTime.String()+" in host functions")
	}
	return "Limits per call: " + strings.Join(parts, ", ") + "."
}

// filesText describes /work, the mounts and the rest of the file system;
// "" when there is nothing to say.
func (b briefing) filesText() string {
	var parts []string
	if b.files != nil {
		size := b.files.MaxBytes
		if size <= 0 {
			size = session.DefaultMaxFileBytes
		}
		size = min(size, cmp.Or(b.maxState, session.DefaultMaxStateSize))
		keep := "kept with the session"
		if b.ephemeral {
			keep = "empty at the start of each call"
		}
		parts = append(parts, fmt.Sprintf("%s is this session's own directory and the working directory (%s, %d entries), %s.",
			session.FilesMount, runtime.ByteSize(size), cmp.Or(b.files.MaxEntries, session.DefaultMaxFileEntries), keep))
	}
	if len(b.mounts) > 0 {
		m := make([]string, len(b.mounts))
		for i, s := range b.mounts {
			m[i] = s.Guest + " (" + mountModeText(s) + ")"
		}
		parts = append(parts, "Mounted directories: "+strings.Join(m, ", ")+".")
	}
	if b.denyFS {
		if len(parts) == 0 {
			parts = append(parts, "There is no file system: open() raises PermissionError.")
		} else {
			parts = append(parts, "Other paths raise PermissionError.")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Files: " + strings.Join(parts, " ")
}

// mountModeText says what the code can do with a mount.
func mountModeText(s vfs.MountSpec) string {
	var t string
	switch s.Mode {
	case vfs.MountReadOnly:
		return "read-only"
	case vfs.MountReadWrite:
		t = "read-write"
	case vfs.MountOverlay:
		t = "writable; changes are not saved"
	default:
		t = s.Mode.String()
	}
	if s.WriteLimit > 0 {
		t += ", up to " + runtime.ByteSize(s.WriteLimit) + " written"
	}
	return t
}

// callables is what the code can call or use, in the order the
// description lists it.
type callables struct {
	fns        []tools.Function
	classes    []*tools.Class
	namespaces []*tools.Class
	globals    []object.Pair
}

// callablesOf reads r's callables.
func callablesOf(r *tools.Registry) callables {
	c := r.Catalog()
	return callables{fns: c.Functions, classes: c.Classes, namespaces: c.Namespaces, globals: c.Globals}
}

func (c callables) empty() bool {
	return len(c.fns)+len(c.classes)+len(c.namespaces)+len(c.globals) == 0
}

// stubs lists the callables as Python stubs, one line per definition with
// the first line of its description as a comment.
func (c callables) stubs() string {
	var b strings.Builder
	if len(c.fns) > 0 {
		b.WriteString("Functions (call them directly; await the async ones):")
		for _, f := range c.fns {
			b.WriteString("\n" + stubLine(f, "", false))
		}
	}
	for _, ns := range c.namespaces {
		sep(&b)
		fmt.Fprintf(&b, "MCP server %s (its tools are async: await %s.tool(...)):", ns.Name, ns.Name)
		for _, m := range ns.Methods {
			b.WriteString("\n" + stubLine(m, ns.Name+".", false))
		}
	}
	if len(c.classes) > 0 {
		sep(&b)
		b.WriteString("Classes (the host gives you their objects):")
		for _, cl := range c.classes {
			b.WriteString("\nclass " + cl.Name + ":" + comment(cl.Description))
			for _, a := range cl.Attributes {
				b.WriteString("\n    " + a.Stub())
			}
			for _, m := range cl.Methods {
				b.WriteString("\n    " + strings.ReplaceAll(stubLine(m, "", true), "\n", "\n    "))
			}
		}
	}
	c.globalsText(&b)
	b.WriteString("\n" + helpHint)
	return b.String()
}

// helpHint closes the list of callables.
const helpHint = "list_functions() lists them; help('name') shows one in full."

// names lists the callables by name, by category.
func (c callables) names() string {
	var b strings.Builder
	if len(c.fns) > 0 {
		b.WriteString("Functions by category (\"async\": await it):")
		cat := ""
		for _, f := range c.fns {
			name := f.Name
			if f.Async {
				name += " (async)"
			}
			if f.Category != cat {
				cat = f.Category
				b.WriteString("\n- " + cat + ": " + name)
			} else {
				b.WriteString(", " + name)
			}
		}
	}
	if len(c.namespaces) > 0 {
		sep(&b)
		b.WriteString("MCP servers (their tools are async: await ns.tool(...)):")
		for _, ns := range c.namespaces {
			names := make([]string, len(ns.Methods))
			for i, m := range ns.Methods {
				names[i] = m.Name
			}
			b.WriteString("\n- " + ns.Name + ": " + strings.Join(names, ", "))
		}
	}
	if len(c.classes) > 0 {
		sep(&b)
		names := make([]string, len(c.classes))
		for i, cl := range c.classes {
			names[i] = cl.Name
		}
		b.WriteString("Classes (the host gives you their objects): " + strings.Join(names, ", "))
	}
	c.globalsText(&b)
	b.WriteString("\n" + helpHint)
	return b.String()
}

// counts says how many callables there are, by category and namespace.
func (c callables) counts() string {
	var parts []string
	for i := 0; i < len(c.fns); {
		j := i
		for j < len(c.fns) && c.fns[j].Category == c.fns[i].Category {
			j++
		}
		parts = append(parts, c.fns[i].Category+" ("+count(j-i, "function")+")")
		i = j
	}
	for _, ns := range c.namespaces {
		parts = append(parts, fmt.Sprintf("MCP server %s (%s: await %s.tool(...))", ns.Name, count(len(ns.Methods), "async tool"), ns.Name))
	}
	if len(c.classes) > 0 {
		parts = append(parts, count(len(c.classes), "class"))
	}
	if len(c.globals) > 0 {
		parts = append(parts, count(len(c.globals), "predefined name"))
	}
	return "Host functions: " + strings.Join(parts, "; ") + ". list_functions(category) lists them; help() gives an overview and help('name') shows one in full."
}

// count spells n things: "1 class", "2 functions".
func count(n int, thing string) string {
	switch {
	case n == 1:
		return "1 " + thing
	case strings.HasSuffix(thing, "s"):
		return strconv.Itoa(n) + " " + thing + "es"
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// globalsText adds the predefined names: a host object with its class.
func (c callables) globalsText(b *strings.Builder) {
	if len(c.globals) == 0 {
		return
	}
	names := make([]string, len(c.globals))
	for i, g := range c.globals {
		names[i] = string(g.Key.(object.Str))
		if in, ok := g.Value.(object.Instance); ok && in.Class.HostDefined {
			names[i] += ": " + in.Class.Name
		}
	}
	sep(b)
	b.WriteString("Predefined names: " + strings.Join(names, ", "))
}

// sep starts a new paragraph of b unless b is empty.
func sep(b *strings.Builder) {
	if b.Len() > 0 {
		b.WriteString("\n")
	}
}

// stubLine renders f as its stub (Function.Stub, annotations from the
// parameter types) without a docstring, named qual+f.Name and taking self
// when method is set, with the first line of its description as a comment.
func stubLine(f tools.Function, qual string, method bool) string {
	desc := f.Description
	f.Description = ""
	lines := strings.Split(f.Stub(), "\n")
	for i, line := range lines {
		for _, def := range []string{"def ", "async def "} {
			if rest, ok := strings.CutPrefix(line, def+f.Name+"("); ok {
				self := ""
				if method {
					self = "self"
					if !strings.HasPrefix(rest, ")") {
						self += ", "
					}
				}
				lines[i] = def + qual + f.Name + "(" + self + rest
			}
		}
	}
	line := strings.Join(lines, "\n") + comment(desc)
	if f.Approval {
		line += " [waits for a person's approval]"
	}
	return line
}

// comment is the first line of a description as a trailing comment; ""
// when it is empty.
func comment(desc string) string {
	if d, _, _ := strings.Cut(desc, "\n"); strings.TrimSpace(d) != "" {
		return "  # " + strings.TrimSpace(d)
	}
	return ""
}

// estimateTokens estimates the number of tokens a model's tokeniser makes
// of s, counting word pieces as GPT-style byte-pair encodings roughly cut
// them: a run of letters, digits and underscores is one token per 6
// characters begun (3 for a run of digits), every other visible ASCII
// character is one, a line break is one and other spaces are free (they
// join the next word), and any other character is one. For English it
// comes close to the usual 4 characters per token; for code, whose
// punctuation mostly merges in real tokenisers, it errs high, which suits
// a budget.
func estimateTokens(s string) int {
	n, run, digits := 0, 0, true
	flush := func() {
		if run > 0 {
			per := 6
			if digits {
				per = 3
			}
			n += (run + per - 1) / per
		}
		run, digits = 0, true
	}
	for _, r := range s {
		switch {
		case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'):
			run++
			digits = digits && unicode.IsDigit(r)
		case r == '\n':
			flush()
			n++
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}
