package typecheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/sys"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/internal/guest"
	"github.com/monty-go/monty/runtime/internal/modcache"
	"github.com/monty-go/monty/runtime/internal/pages"
	"github.com/monty-go/monty/runtime/internal/wire"
	"github.com/monty-go/monty/wasm/checker"
)

// ABIVersion is the request/response protocol version this package speaks
// with the checker module; a module reporting another is refused.
const ABIVersion = 1

// Operation codes of checker_call (docs/abi.md).
const (
	opInfo   = 0
	opCheck  = 1
	opMemory = 2
)

// Response status codes.
const (
	statusOK          = 0
	statusDiagnostics = 1
	statusFailure     = 2
)

const (
	// memoryHeadroom is added to Limits.MaxMemory for the checker's own
	// caches (typeshed modules it analyses on the way), as upstream Monty
	// does for checks.
	memoryHeadroom = 32 << 20
	// retainLimit is how much an idle instance may keep allocated beyond
	// its baseline (analysed typeshed, earlier checks' caches) before it is
	// dropped instead of reused, so that state cannot grow without bound
	// across checks.
	retainLimit = 256 << 20
	// oomExitCode is the exit code the module ends with when a check
	// passes its memory budget (monty-alloc's `exit-code` feature).
	oomExitCode = 65
	// defaultMemoryPages caps an instance's linear memory (1 GiB), which
	// bounds a check without a MaxMemory.
	defaultMemoryPages = 16384
)

// ErrClosed is returned by Check after the Checker was closed.
var ErrClosed = errors.New("monty: type checker is closed")

// ErrNoModule is returned by a check when the Checker would run
// checker.wasm on wazero and the program does not carry it: it imports
// neither github.com/monty-go/monty/runtime/typecheck/embedded (the
// module, on wazero) nor github.com/monty-go/monty/wasm/aot/checker (the
// checker translated ahead of time, which runs where mmap is: not on
// Windows), or it was built with the tag monty_checker_noembed and asks
// for wazero.
var ErrNoModule = errors.New("monty: this program links no type checker module: import _ \"github.com/monty-go/monty/runtime/typecheck/embedded\" " +
	"(checker.wasm, 16.5 MB) or the checker translated ahead of time (github.com/monty-go/monty/wasm/aot/checker), " +
	"or pass the module with WithModule")

// registeredModule is the checker.wasm that RegisterModule received.
var registeredModule atomic.Pointer[[]byte]

// RegisterModule makes module the checker.wasm that Checkers compile with
// wazero unless given WithModule. It is called by the init function of
// github.com/monty-go/monty/runtime/typecheck/embedded, which a program
// imports to carry the module (package typecheck itself does not, so that
// programs that never type-check, or run the checker translated ahead of
// time, go without its 16.5 MB); nothing else should call it. It is safe
// for concurrent use.
func RegisterModule(module []byte) { registeredModule.Store(&module) }

// linkedModule is the module RegisterModule received, if any.
func linkedModule() []byte {
	if p := registeredModule.Load(); p != nil {
		return *p
	}
	return nil
}

// Checker type-checks Python code the way Monty runs it: ty's analysis
// against the part of the standard library Monty implements, with the
// stubs a request brings. It runs in its own wasm module, separate from the
// interpreter, compiled when the Checker is made (New) or at its first
// check (Lazy); the machine code is cached like the interpreter's (see
// runtime.DefaultCacheDir).
//
// A Checker is safe for concurrent use: each check takes an idle instance
// of the module (keeping what it analysed of typeshed warm for the next
// check) or makes one.
type Checker struct {
	cfg config

	mu      sync.Mutex
	loaded  *compiled     // set once compiled
	loading chan struct{} // closed when the compilation under way ends
	loadErr error         // why the last compilation failed
	idle    []*instance
	closed  bool
}

// compiled is the checker module ready to make instances, on wazero or
// translated to Go ahead of time.
type compiled struct {
	maxPages uint32
	code     code
	version  string
	info     CompileInfo
}

// code makes instances of the checker module on one engine.
type code interface {
	instantiate(ctx context.Context, stderr *guest.Stderr) (backend, error)
	close(ctx context.Context) error
}

// backend is one instance of the checker module on its engine. Not safe
// for concurrent use.
type backend interface {
	abiVersion(ctx context.Context) (uint32, error)
	reserve(ctx context.Context, n uint32) (uint32, error)
	// call runs checker_call(op, n) and returns its packed response
	// pointer and length.
	call(ctx context.Context, op, n uint32) (uint64, error)
	read(ptr, n uint32) ([]byte, bool)
	write(ptr uint32, b []byte) bool
	close(ctx context.Context)
}

// CompileInfo tells how a Checker got its code ready.
type CompileInfo struct {
	// CacheDir is the cache entry used ("" when none).
	CacheDir string
	// Cached reports that the machine code came from the cache.
	Cached bool
	// Ready is how long New took.
	Ready time.Duration
	// AOT reports that the checker runs translated to Go ahead of time
	// (RegisterAOT): nothing was compiled or cached.
	AOT bool
}

// Option configures New.
type Option func(*config)

type config struct {
	cacheDir    string
	module      []byte // set by WithModule (moduleSet), else the linked one
	moduleSet   bool
	memoryPages uint32
	log         *slog.Logger
	wazero      bool
}

// WithCacheDir caches the checker's machine code in dir (default
// runtime.DefaultCacheDir(); "" turns caching off).
func WithCacheDir(dir string) Option { return func(c *config) { c.cacheDir = dir } }

// WithModule replaces the linked checker module (RegisterModule) with
// wasmBytes, run on wazero (for testing other builds).
func WithModule(wasmBytes []byte) Option {
	return func(c *config) { c.module, c.moduleSet = wasmBytes, true }
}

// WithWazero keeps the Checker on wazero even when the checker translated
// to Go ahead of time is linked (see [RegisterAOT]): to compare the two.
func WithWazero() Option { return func(c *config) { c.wazero = true } }

// WithMaxMemoryPages caps each instance's linear memory, in 64 KiB pages
// (default 16384, 1 GiB).
func WithMaxMemoryPages(pages uint32) Option { return func(c *config) { c.memoryPages = pages } }

// WithLogger receives the checker's log records (default slog.Default):
// compile_start and compile_done around a compilation, cache_unusable
// when the cache cannot be used. Each carries "event" and "module" =
// "checker".
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// New compiles the checker module, or loads its machine code from the
// cache, and makes one instance. Close it when done.
func New(ctx context.Context, opts ...Option) (*Checker, error) {
	c := Lazy(opts...)
	if _, err := c.load(ctx); err != nil {
		_ = c.Close(context.Background())
		return nil, err
	}
	return c, nil
}

// Lazy returns a Checker that compiles the module at its first check, so
// that a service offering checks pays nothing until one is asked for. A
// failed compilation is returned by that check and tried again by the
// next.
func Lazy(opts ...Option) *Checker {
	cfg := config{cacheDir: runtime.DefaultCacheDir(), memoryPages: defaultMemoryPages}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	return &Checker{cfg: cfg}
}

// Load compiles the module now unless that is done (a Lazy checker
// compiles at its first check otherwise); a service that checks by default
// can start it in the background at start-up. The compilation runs to its
// end even when ctx ends first (it serves every later check); Load then
// returns ctx's error.
func (c *Checker) Load(ctx context.Context) error {
	_, err := c.load(ctx)
	return err
}

// load returns the compiled module, starting its compilation if none is
// under way and waiting for it or ctx.
func (c *Checker) load(ctx context.Context) (*compiled, error) {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, ErrClosed
	case c.loaded != nil:
		m := c.loaded
		c.mu.Unlock()
		return m, nil
	case c.loading == nil:
		c.loading = make(chan struct{})
		go c.compile(c.loading)
	}
	loading := c.loading
	c.mu.Unlock()
	select {
	case <-loading:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting for the type checker to compile: %w", runtime.ErrCancelled, context.Cause(ctx))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded != nil {
		return c.loaded, nil
	}
	return nil, c.loadErr
}

// compile compiles the module (from the cache when it holds it) and
// closes done; a failure is kept in loadErr until the next load tries
// again.
func (c *Checker) compile(done chan struct{}) {
	defer close(done)
	ctx := context.Background()
	start := time.Now()
	cfg, log := &c.cfg, c.cfg.log
	var entry *modcache.Entry
	t := registeredAOT.Load()
	aot := t != nil && guest.CanInterrupt && !cfg.wazero && !cfg.moduleSet
	module := cfg.module
	if !cfg.moduleSet {
		module = linkedModule()
	}
	if cfg.cacheDir != "" && !aot && len(module) > 0 {
		hash := checker.SHA256
		if cfg.moduleSet {
			hash = modcache.Hash(module)
		}
		var err error
		if entry, err = modcache.Open(cfg.cacheDir, hash); err != nil {
			log.Warn("the compilation cache cannot be used; compiling the type checker in memory",
				"event", "cache_unusable", "module", "checker", "cache_dir", cfg.cacheDir, "error", err)
			entry = nil
		}
	}
	var m *compiled
	var first *instance
	var err error
	switch {
	case aot:
		m, first, err = startAOT(ctx, cfg, t)
	case len(module) == 0:
		err = ErrNoModule
	default:
		m, first, err = compileModule(ctx, cfg, module, entry, log)
	}
	if err != nil && entry != nil && entry.Warm {
		// A damaged entry: write it afresh.
		log.Warn("the compilation cache entry is damaged; compiling the type checker again",
			"event", "cache_damaged", "module", "checker", "cache_dir", entry.Dir, "error", err)
		if entry.Clear() == nil {
			m, first, err = compileModule(ctx, cfg, module, entry, log)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loading = nil
	switch {
	case err != nil:
		c.loadErr = err
	case c.closed:
		first.close(ctx)
		_ = m.close(ctx)
		c.loadErr = ErrClosed
	default:
		m.info.Ready = time.Since(start)
		c.loaded, c.loadErr = m, nil
		c.idle = append(c.idle, first)
	}
	if err == nil && !aot && !cfg.moduleSet {
		pages.Release(module)
	}
}

// startAOT makes the translated module the checker's code and checks it
// with a first instance, which stays idle for the first check.
func startAOT(ctx context.Context, cfg *config, t *translatedChecker) (*compiled, *instance, error) {
	if t.sha256 != checker.SHA256 {
		return nil, nil, fmt.Errorf("monty: the linked AOT type checker was translated from checker.wasm %.12s, this package embeds %.12s: "+
			"regenerate it (make aot) or use the matching versions", t.sha256, checker.SHA256)
	}
	c := &compiled{maxPages: cfg.memoryPages, code: &aotCode{newInstance: t.newInstance, maxBytes: uint64(cfg.memoryPages) << 16}}
	c.info.AOT = true
	in, err := c.start(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, in, nil
}

// start makes the first instance, checks that it speaks this package's
// ABI and reads the module's version.
func (c *compiled) start(ctx context.Context) (*instance, error) {
	in, err := c.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	abi, err := in.b.abiVersion(ctx)
	if err != nil {
		in.close(ctx)
		return nil, fmt.Errorf("monty: read type checker ABI version: %w", err)
	}
	if abi != ABIVersion {
		in.close(ctx)
		return nil, fmt.Errorf("monty: type checker module speaks ABI version %d, this package speaks %d: rebuild it (make wasm) or update the package", abi, ABIVersion)
	}
	in.req.Reset()
	r, err := in.call(ctx, opInfo)
	if err == nil {
		err = r.ArrayOf(2)
	}
	if err == nil {
		_, err = r.Uint()
	}
	if err == nil {
		err = r.ArrayOf(2)
	}
	if err == nil {
		c.version, err = r.Text()
	}
	if err != nil {
		in.close(ctx)
		return nil, fmt.Errorf("monty: type checker info: %w", err)
	}
	return in, nil
}

// MontyVersion is the version of the monty crates the checker was built
// from (it matches the interpreter's, runtime.Engine.MontyVersion); ""
// until a Lazy checker has compiled.
func (c *Checker) MontyVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded == nil {
		return ""
	}
	return c.loaded.version
}

// CompileInfo tells where the checker's code came from (zero until a Lazy
// checker has compiled).
func (c *Checker) CompileInfo() CompileInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded == nil {
		return CompileInfo{}
	}
	return c.loaded.info
}

// Check type-checks req.Code. A Result with diagnostics is not an error
// (use Result.Err for one); the error is for a check that could not run:
// an invalid request (runtime.ErrInvalidOption), a limit
// (runtime.ErrTimeLimit, runtime.ErrMemoryLimit), ctx ending
// (runtime.ErrCancelled and ctx's error), a checker failure
// (ErrCheckerFailed) or a closed Checker (ErrClosed). The Checker stays
// usable after any of them.
func (c *Checker) Check(ctx context.Context, req Request) (*Result, error) {
	if err := req.normalize(); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %w", runtime.ErrCancelled, context.Cause(ctx))
	}
	m, err := c.load(ctx)
	if err != nil {
		return nil, err
	}
	in, err := c.get(ctx, m)
	if err != nil {
		return nil, err
	}
	callCtx := ctx
	if d := req.Limits.MaxDuration; d > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, d, errCheckTimeout)
		defer cancel()
	}
	encode(&in.req, &req, in.retained)
	r, err := in.call(callCtx, opCheck)
	if err != nil {
		in.close(context.Background())
		return nil, classify(ctx, callCtx, err, in, &req)
	}
	res, err := decodeResult(r)
	if err != nil && !errors.Is(err, runtime.ErrInvalidOption) {
		// The checker failed inside: its instance is not trusted again.
		in.close(context.Background())
		return nil, err
	}
	c.put(ctx, in)
	return res, err
}

// errCheckTimeout is the cause of a check's own time limit.
var errCheckTimeout = errors.New("type check time limit")

// classify turns a failed call into the error Check returns.
func classify(ctx, callCtx context.Context, err error, in *instance, req *Request) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case oomExitCode:
			if req.Limits.MaxMemory == 0 {
				return fmt.Errorf("%w: the type check needed more memory than the checker may use (%d MiB of linear memory); check less code at once",
					runtime.ErrMemoryLimit, uint64(in.maxPages)*64>>10)
			}
			return fmt.Errorf("%w: the type check needed more memory than its budget (MaxMemory %d bytes plus %d MiB headroom); check less code at once or raise the limit",
				runtime.ErrMemoryLimit, req.Limits.MaxMemory, memoryHeadroom>>20)
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", runtime.ErrCancelled, context.Cause(ctx))
			}
			if context.Cause(callCtx) == errCheckTimeout {
				return fmt.Errorf("%w: the type check ran past %v", runtime.ErrTimeLimit, req.Limits.MaxDuration)
			}
		}
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if s := strings.TrimSpace(in.stderr.String()); s != "" {
		msg += " (" + s + ")"
	} else if strings.Contains(msg, "out of bounds memory access") || strings.Contains(msg, "index out of range") {
		// The module's stack sits below its data, so a stack overflow
		// (deep recursion in ty on deeply nested code) ends up here: on
		// wazero as an out-of-bounds access, translated to Go as an index
		// out of range.
		msg += " (most likely a stack overflow: the code nests too deeply to check; split long expressions or nested literals)"
	}
	return &CheckerError{Message: "the checker crashed: " + msg}
}

// decodeResult reads a check's response.
func decodeResult(r *wire.Reader) (*Result, error) {
	bad := func(err error) (*Result, error) {
		return nil, &CheckerError{Message: "malformed response: " + err.Error()}
	}
	if err := r.ArrayOf(2); err != nil {
		return bad(err)
	}
	status, err := r.Uint()
	if err != nil {
		return bad(err)
	}
	res := &Result{}
	switch status {
	case statusOK:
		if !r.Null() {
			return bad(errors.New("clean result carries a payload"))
		}
	case statusDiagnostics:
		var gitlab string
		if err = r.ArrayOf(2); err == nil {
			if res.Text, err = r.Text(); err == nil {
				gitlab, err = r.Text()
			}
		}
		if err != nil {
			return bad(err)
		}
		if res.Diagnostics, err = parseDiagnostics(gitlab); err != nil {
			return bad(err)
		}
		if len(res.Diagnostics) == 0 {
			return bad(errors.New("diagnostics reported but none listed"))
		}
	case statusFailure:
		msg, err := r.Text()
		if err != nil {
			return bad(err)
		}
		if rest, ok := strings.CutPrefix(msg, "invalid request: "); ok {
			return nil, fmt.Errorf("%w: %s", runtime.ErrInvalidOption, rest)
		}
		return nil, &CheckerError{Message: msg}
	default:
		return bad(fmt.Errorf("unknown status %d", status))
	}
	return res, nil
}

// normalize fills defaults and refuses what the module would misread.
func (req *Request) normalize() error {
	if req.Path == "" {
		req.Path = DefaultPath
	}
	if req.Format == "" {
		req.Format = Full
	}
	f, err := ParseFormat(string(req.Format))
	if err != nil {
		return err
	}
	req.Format = f
	if !utf8.ValidString(req.Code) || !utf8.ValidString(req.Stubs) || !utf8.ValidString(req.Prelude) {
		return fmt.Errorf("%w: type check: the code and stubs must be valid UTF-8", runtime.ErrInvalidOption)
	}
	for _, m := range req.Modules {
		if !utf8.ValidString(m.Name) || !utf8.ValidString(m.Source) {
			return fmt.Errorf("%w: type check: module stub %q is not valid UTF-8", runtime.ErrInvalidOption, m.Name)
		}
	}
	p := req.Path
	if !strings.HasSuffix(p, ".py") || len(p) == len(".py") || path.Base(p) != p || strings.ContainsAny(p, "\\\x00") || p == StubsPath {
		return fmt.Errorf("%w: type check path %q: want a file name ending in .py, without directories", runtime.ErrInvalidOption, p)
	}
	return nil
}

// encode writes the check request:
// [code, path, stubs|null, stubs_path, [[module, source]...], prelude,
// format, color, memory_budget|null]. The budget counts from the module's
// baseline, so it adds what the instance retained from earlier checks
// (analysed typeshed modules): MaxMemory bounds what this check adds.
func encode(w *wire.Writer, req *Request, retained uint64) {
	w.Reset()
	w.Array(9)
	w.Text(req.Code)
	w.Text(req.Path)
	// A prelude always has a stubs file, where diagnostics show it.
	w.OptText(req.Stubs, req.Stubs != "" || req.Prelude != "")
	w.Text(StubsPath)
	w.Array(len(req.Modules))
	for _, m := range req.Modules {
		w.Array(2)
		w.Text(m.Name)
		w.Text(m.Source)
	}
	w.Text(req.Prelude)
	w.Text(string(req.Format))
	w.Bool(req.Color)
	if req.Limits.MaxMemory > 0 {
		w.Uint(uint64(req.Limits.MaxMemory) + memoryHeadroom + retained)
	} else {
		w.Null()
	}
}

// get takes an idle instance or makes one.
func (c *Checker) get(ctx context.Context, m *compiled) (*instance, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if n := len(c.idle); n > 0 {
		in := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return in, nil
	}
	c.mu.Unlock()
	return m.instantiate(ctx)
}

// put keeps in for the next check unless the Checker is closed, enough
// instances are idle, or in holds too much from earlier checks.
func (c *Checker) put(ctx context.Context, in *instance) {
	in.req.Reset()
	if r, err := in.call(context.WithoutCancel(ctx), opMemory); err != nil {
		in.close(ctx)
		return
	} else if r.ArrayOf(2) != nil {
		in.close(ctx)
		return
	} else if _, err := r.Uint(); err != nil {
		in.close(ctx)
		return
	} else if kept, err := r.Uint(); err != nil || kept > retainLimit {
		in.close(ctx)
		return
	} else {
		in.retained = kept
	}
	c.mu.Lock()
	if c.closed || len(c.idle) >= goruntime.GOMAXPROCS(0) {
		c.mu.Unlock()
		in.close(ctx)
		return
	}
	c.idle = append(c.idle, in)
	c.mu.Unlock()
}

// Close frees the compiled module and every idle instance; checks running
// meanwhile finish first.
func (c *Checker) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	idle, m := c.idle, c.loaded
	c.idle = nil
	c.mu.Unlock()
	for _, in := range idle {
		in.close(ctx)
	}
	if m == nil {
		return nil
	}
	return m.close(ctx)
}

func (c *compiled) close(ctx context.Context) error { return c.code.close(ctx) }

// instance is one instance of the checker module. Not safe for concurrent
// use; the Checker hands it to one check at a time.
type instance struct {
	maxPages       uint32
	retained       uint64 // bytes held above the baseline after the last check
	b              backend
	reqPtr, reqCap uint32
	req            wire.Writer
	stderr         *guest.Stderr
}

func (c *compiled) instantiate(ctx context.Context) (*instance, error) {
	in := &instance{stderr: &guest.Stderr{Max: 4096}, maxPages: c.maxPages}
	b, err := c.code.instantiate(ctx, in.stderr)
	if err != nil {
		return nil, err
	}
	in.b = b
	return in, nil
}

// call runs op with the request in in.req and returns a reader over a copy
// of the response.
func (in *instance) call(ctx context.Context, op uint32) (*wire.Reader, error) {
	req := in.req.Buf
	if uint32(len(req)) > in.reqCap {
		ptr, err := in.b.reserve(ctx, uint32(len(req)))
		if err != nil {
			return nil, err
		}
		in.reqPtr, in.reqCap = ptr, uint32(len(req))
	}
	if len(req) > 0 && !in.b.write(in.reqPtr, req) {
		return nil, errors.New("request buffer outside memory")
	}
	packed, err := in.b.call(ctx, op, uint32(len(req)))
	if err != nil {
		return nil, err
	}
	b, ok := in.b.read(uint32(packed>>32), uint32(packed))
	if !ok {
		return nil, errors.New("response outside memory")
	}
	return wire.NewReader(append([]byte(nil), b...)), nil
}

func (in *instance) close(ctx context.Context) { in.b.close(ctx) }

var defaultChecker = sync.OnceValue(func() *Checker { return Lazy() })

// Default returns the process-wide Checker (default options), compiling
// the module on first use; a failed attempt is retried by the next call.
func Default(ctx context.Context) (*Checker, error) {
	c := defaultChecker()
	if _, err := c.load(ctx); err != nil {
		return nil, err
	}
	return c, nil
}
