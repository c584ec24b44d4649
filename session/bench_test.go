package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/internal/sessionbench"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/storeurl"
	"github.com/monty-go/monty/session/telemetry"
)

// Benchmarks of saving and loading session state of several sizes on each
// store, with a plain encoding/json round trip of the same data as the
// in-run baseline. Run them with the servers of scripts/services.sh:
//
//	scripts/services.sh start && eval "$(scripts/services.sh env)"
//	go test -run '^$' -bench 'State|JSONRoundTrip|ManagerMemory' ./session/
//
// Without MONTY_TEST_REDIS_URL / MONTY_TEST_S3_* the Redis and S3 cases
// are skipped (benchmarks only; the tests require the servers).

// stateSizes are the sizes of the JSON form of the benchmark state, as in
// seed 004's published figures.
var stateSizes = []struct {
	name  string
	bytes int
}{{"1KB", 1 << 10}, {"100KB", 100 << 10}, {"1MB", 1 << 20}, {"10MB", 10 << 20}}

// stateItem is one record of the benchmark state; its JSON is about 80 bytes.
type stateItem struct {
	ID    int      `json:"id"`
	Name  string   `json:"name"`
	Score float64  `json:"score"`
	Tags  []string `json:"tags"`
}

func itemCount(size int) int { return max(1, size/80) }

// stateShapes are the two kinds of benchmark state: many small records
// (about 80 bytes of JSON each; the cost follows the number of objects)
// and one text of the given size (the cost follows the bytes).
var stateShapes = []struct {
	name string
	code func(size int) string
}{
	{"records", func(size int) string {
		return fmt.Sprintf("data = [{'id': i, 'name': 'item-%%08d' %% i, 'score': i * 0.5, 'tags': ['alpha', 'beta']} for i in range(%d)]", itemCount(size))
	}},
	{"text", func(size int) string {
		return fmt.Sprintf("data = ''.join([str(i %% 997) + ' lorem ipsum dolor ' for i in range(%d)])[:%d]", size/16+1, size)
	}},
}

func goState(size int) []stateItem {
	items := make([]stateItem, itemCount(size))
	for i := range items {
		items[i] = stateItem{ID: i, Name: fmt.Sprintf("item-%08d", i), Score: float64(i) * 0.5, Tags: []string{"alpha", "beta"}}
	}
	return items
}

// benchStores opens every store available to the benchmark.
func benchStores(b *testing.B) []struct {
	name string
	st   store.Store
} {
	ctx := context.Background()
	specs := []struct{ name, spec string }{{"memory", "mem:"}, {"dir", b.TempDir()}}
	if u := os.Getenv("MONTY_TEST_REDIS_URL"); u != "" {
		specs = append(specs, struct{ name, spec string }{"redis", u + "?prefix=monty-bench:"})
	}
	if ep := os.Getenv("MONTY_TEST_S3_ENDPOINT"); ep != "" {
		u := url.URL{Scheme: "s3", Host: ep, Path: "/" + os.Getenv("MONTY_TEST_S3_BUCKET"), RawQuery: "prefix=bench/",
			User: url.UserPassword(os.Getenv("MONTY_TEST_S3_ACCESS_KEY"), os.Getenv("MONTY_TEST_S3_SECRET_KEY"))}
		specs = append(specs, struct{ name, spec string }{"s3", u.String()})
	}
	var out []struct {
		name string
		st   store.Store
	}
	for _, s := range specs {
		st, err := storeurl.Open(ctx, s.spec)
		require.NoError(b, err, s.name)
		b.Cleanup(func() { st.Close() })
		out = append(out, struct {
			name string
			st   store.Store
		}{s.name, st})
	}
	return out
}

// BenchmarkStateSave measures one save: a call that changes a variable,
// then snapshot, dump, compress, sign and store of the whole state.
func BenchmarkStateSave(b *testing.B) {
	ctx := context.Background()
	for _, st := range benchStores(b) {
		for _, shape := range stateShapes {
			for _, size := range stateSizes {
				b.Run(st.name+"/"+shape.name+"/"+size.name, func(b *testing.B) {
					id := "bench-save-" + shape.name + "-" + size.name
					s, err := session.Open(ctx, id, session.Options{Store: st.st, SigningKey: []byte("bench")})
					require.NoError(b, err)
					defer s.Close(ctx)
					res, err := s.Exec(ctx, shape.code(size.bytes)+"\nn = 0")
					require.NoError(b, err)
					require.Nil(b, res.Err)
					for b.Loop() {
						res, err = s.Exec(ctx, "n += 1")
						if err != nil || !res.Saved {
							b.Fatalf("save: %v %+v", err, res)
						}
					}
					b.ReportMetric(float64(res.StateSize), "state-bytes")
					_ = st.st.Delete(ctx, id)
				})
			}
		}
	}
}

// BenchmarkStateLoad measures one load: fetch, verify, decompress and
// restore the state into a fresh interpreter, ready for the next call.
func BenchmarkStateLoad(b *testing.B) {
	ctx := context.Background()
	for _, st := range benchStores(b) {
		for _, shape := range stateShapes {
			for _, size := range stateSizes {
				b.Run(st.name+"/"+shape.name+"/"+size.name, func(b *testing.B) {
					id := "bench-load-" + shape.name + "-" + size.name
					opts := session.Options{Store: st.st, SigningKey: []byte("bench")}
					s, err := session.Open(ctx, id, opts)
					require.NoError(b, err)
					res, err := s.Exec(ctx, shape.code(size.bytes))
					require.NoError(b, err)
					require.True(b, res.Saved)
					require.NoError(b, s.Close(ctx))
					for b.Loop() {
						s, err := session.Open(ctx, id, opts)
						if err != nil || !s.Restored().Found || s.Restored().FromJSON {
							b.Fatalf("load: %v %+v", err, s.Restored())
						}
						_ = s.Close(ctx)
					}
					_ = st.st.Delete(ctx, id)
				})
			}
		}
	}
}

// BenchmarkJSONRoundTrip is the baseline: encoding/json Marshal and
// Unmarshal in Go of the same records as the "records" state.
func BenchmarkJSONRoundTrip(b *testing.B) {
	for _, size := range stateSizes {
		b.Run(size.name, func(b *testing.B) {
			data := goState(size.bytes)
			for b.Loop() {
				raw, err := json.Marshal(data)
				if err != nil {
					b.Fatal(err)
				}
				var back []stateItem
				if err := json.Unmarshal(raw, &back); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkManagerMemory reports the resident memory of a manager that
// knows 1,000 sessions (all stored, each with a little state) of which 50
// are live.
func BenchmarkManagerMemory(b *testing.B) {
	ctx := context.Background()
	const known, live = 1000, 50
	// The timer runs (each iteration fills a manager), so b.Loop settles on
	// a small iteration count; the figures are the metrics, not ns/op.
	for b.Loop() {
		st, err := storeurl.Open(ctx, b.TempDir())
		require.NoError(b, err)
		before := residentBytes(b)
		m := session.NewManager(session.Options{Store: st}, session.ManagerOptions{MaxLive: live})
		for i := range known {
			_, err := m.Exec(ctx, fmt.Sprintf("s%04d", i), fmt.Sprintf("x = %d\nitems = list(range(20))\ndef f(a):\n    return a + x", i))
			require.NoError(b, err)
		}
		require.Equal(b, live, m.Live())
		after := residentBytes(b)
		b.ReportMetric(float64(after-before)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(after-before)/live/(1<<20), "rss-MiB/live")
		m.Close()
		st.Close()
	}
}

// residentBytes reads the process's resident set size from /proc.
func residentBytes(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Skipf("resident memory needs /proc: %v", err)
	}
	var size, resident int64
	_, err = fmt.Sscan(string(data), &size, &resident)
	require.NoError(b, err)
	return resident * int64(os.Getpagesize())
}

// fileShapes are the contents of the 1 MB of files of BenchmarkSaveWithFiles:
// CSV text (compresses well) and random bytes (does not compress).
var fileShapes = []struct {
	name string
	data func() []byte
}{
	{"csv", func() []byte {
		var b []byte
		for i := 0; len(b) < 1<<20; i++ {
			b = fmt.Appendf(b, "%d,item-%08d,%d.%02d,alpha;beta\n", i, i*7919%100000000, i%997, i%100)
		}
		return b[:1<<20]
	}},
	{"random", func() []byte {
		b := make([]byte, 1<<20)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}},
}

// BenchmarkSaveWithFiles measures one call and save of a small session
// without files, and of the same session with 1 MB of files under /work
// (16 files of 64 KiB): unchanged by the call (the stored files section is
// reused, but stored again with the state), and changed by it (one byte
// appended to one file: the section is encoded and compressed again). The
// ratio to "none" is the cost of the files:
//
//	go test -run '^$' -bench SaveWithFiles ./session/
func BenchmarkSaveWithFiles(b *testing.B) {
	ctx := context.Background()
	for _, st := range benchStores(b) {
		run := func(name string, data []byte, code string) {
			b.Run(st.name+"/"+name, func(b *testing.B) {
				id := "bench-files-" + strings.ReplaceAll(name, "/", "-")
				_ = st.st.Delete(ctx, id)
				s, err := session.Open(ctx, id, session.Options{Store: st.st, SigningKey: []byte("bench"), Files: &session.Files{}})
				require.NoError(b, err)
				defer s.Close(ctx)
				res, err := s.Exec(ctx, "n = 0\nrecords = [{'id': i, 'name': 'x' * 10} for i in range(100)]")
				require.NoError(b, err)
				require.True(b, res.Saved)
				for i := 0; i < len(data); i += 64 << 10 {
					_, err := s.WriteFile(ctx, fmt.Sprintf("data/part-%02d", i/(64<<10)), data[i:min(i+64<<10, len(data))])
					require.NoError(b, err)
				}
				for b.Loop() {
					res, err = s.Exec(ctx, code)
					if err != nil || !res.Saved {
						b.Fatalf("save: %v %+v", err, res)
					}
				}
				b.ReportMetric(float64(res.StateSize), "state-bytes")
				_ = st.st.Delete(ctx, id)
			})
		}
		run("none", nil, "n += 1")
		for _, shape := range fileShapes {
			data := shape.data()
			run("1MB-"+shape.name+"/unchanged", data, "n += 1")
			run("1MB-"+shape.name+"/changed", data, "n += 1\nopen('/work/data/part-00', 'a').write('x')")
		}
	}
}

// BenchmarkLoadWithFiles measures opening the sessions of
// BenchmarkSaveWithFiles: fetch, verify, decompress, restore the
// interpreter and put the files back under /work.
func BenchmarkLoadWithFiles(b *testing.B) {
	ctx := context.Background()
	for _, st := range benchStores(b) {
		run := func(name string, data []byte) {
			b.Run(st.name+"/"+name, func(b *testing.B) {
				id := "bench-files-load-" + name
				opts := session.Options{Store: st.st, SigningKey: []byte("bench"), Files: &session.Files{}}
				_ = st.st.Delete(ctx, id)
				s, err := session.Open(ctx, id, opts)
				require.NoError(b, err)
				_, err = s.Exec(ctx, "n = 0\nrecords = [{'id': i, 'name': 'x' * 10} for i in range(100)]")
				require.NoError(b, err)
				for i := 0; i < len(data); i += 64 << 10 {
					_, err := s.WriteFile(ctx, fmt.Sprintf("data/part-%02d", i/(64<<10)), data[i:min(i+64<<10, len(data))])
					require.NoError(b, err)
				}
				require.NoError(b, s.Close(ctx))
				for b.Loop() {
					s, err := session.Open(ctx, id, opts)
					if err != nil {
						b.Fatal(err)
					}
					_ = s.Close(ctx)
				}
				_ = st.st.Delete(ctx, id)
			})
		}
		run("none", nil)
		for _, shape := range fileShapes {
			run("1MB-"+shape.name, shape.data())
		}
	}
}

// BenchmarkExecTelemetry is the cost of telemetry per execution: a call
// of one host function, its state stored or not (ephemeral), with
// telemetry off (no provider set: the global no-op ones) and on (SDK
// providers recording every span through a batch processor, and every
// measurement). Each -count runs the four in a row; to interleave them,
// loop over -count 1.
func BenchmarkExecTelemetry(b *testing.B) {
	ctx := context.Background()
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"inc": {Func: func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
			return args[0].(object.Int) + 1, nil
		}},
	}}
	for _, mode := range []string{"stored/off", "stored/on", "ephemeral/off", "ephemeral/on"} {
		b.Run(mode, func(b *testing.B) {
			ephemeral := strings.HasPrefix(mode, "ephemeral")
			opts := session.Options{Store: memstore.New(memstore.Options{}), Host: host, Ephemeral: ephemeral}
			if strings.HasSuffix(mode, "on") {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer tp.Shutdown(ctx)
				defer mp.Shutdown(ctx)
				opts.Telemetry = telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp})
			}
			s, err := session.Open(ctx, "bench-telemetry", opts)
			require.NoError(b, err)
			defer s.Close(ctx)
			code := "n = inc(n)"
			if ephemeral {
				code = "inc(1)" // every call starts empty
			} else {
				_, err = s.Exec(ctx, "n = 0")
				require.NoError(b, err)
			}
			for b.Loop() {
				res, err := s.Exec(ctx, code)
				if err != nil || res.Err != nil || res.Saved == ephemeral {
					b.Fatalf("exec: %v %+v", err, res)
				}
			}
		})
	}
}

// discardSpans is an exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// managerSurface is a session continued through a Manager over a
// directory store (sessionbench.Surface).
type managerSurface struct {
	ctx context.Context
	st  store.Store
	m   *session.Manager
	id  string
}

func (s *managerSurface) Exec(code string) (string, error) {
	res, err := s.m.Exec(s.ctx, s.id, code)
	if err != nil {
		return "", err
	}
	if res.Err != nil {
		return "", res.Err
	}
	return object.Repr(res.Value), nil
}

func (s *managerSurface) Save() (sessionbench.Entries, error) {
	return sessionbench.StoreEntries(s.ctx, s.st)
}

// Restore closes the live session, so that the next call opens it from
// the restored entries.
func (s *managerSurface) Restore(entries sessionbench.Entries) error {
	if err := s.m.Forget(s.id); err != nil {
		return err
	}
	return sessionbench.ReplaceEntries(s.ctx, s.st, entries)
}

// BenchmarkContinueSession measures one more snippet of a session that
// already ran 10, 300 or 1,000 (package sessionbench), through a Manager
// over a directory store, as an agent's conversation continues its
// session: the cost of a call at the 1,000th snippet against the 10th.
//
//	go test -run '^$' -bench 'ContinueSession' -benchtime 40x ./session/
func BenchmarkContinueSession(b *testing.B) {
	ctx := context.Background()
	st, err := dirstore.Open(b.TempDir(), dirstore.Options{})
	require.NoError(b, err)
	defer st.Close()
	m := session.NewManager(session.Options{Store: st, SigningKey: []byte("bench")}, session.ManagerOptions{IdleTimeout: -1})
	defer m.Close()
	sessionbench.Run(b, "api", &managerSurface{ctx: ctx, st: st, m: m, id: "bench-continue"})
}

// BenchmarkSessionOpen measures opening a stored session of 10, 300 or
// 1,000 snippets (the states of BenchmarkContinueSession) from a
// directory store: fetch, verify, decompress and restore, what an instance
// does to continue a session it does not hold.
func BenchmarkSessionOpen(b *testing.B) {
	ctx := context.Background()
	st, err := dirstore.Open(b.TempDir(), dirstore.Options{})
	require.NoError(b, err)
	defer st.Close()
	opts := session.Options{Store: st, SigningKey: []byte("bench")}
	m := session.NewManager(opts, session.ManagerOptions{IdleTimeout: -1})
	defer m.Close()
	states, err := sessionbench.Build("api", &managerSurface{ctx: ctx, st: st, m: m, id: "bench-continue"})
	require.NoError(b, err)
	for _, n := range sessionbench.Sizes {
		b.Run(fmt.Sprintf("snippet=%d", n), func(b *testing.B) {
			require.NoError(b, m.Forget("bench-continue"))
			require.NoError(b, sessionbench.ReplaceEntries(ctx, st, states[n]))
			for b.Loop() {
				s, err := session.Open(ctx, "bench-continue", opts)
				if err != nil || !s.Restored().Found || s.Restored().FromJSON {
					b.Fatalf("open: %v %+v", err, s.Restored())
				}
				_ = s.Close(ctx)
			}
		})
	}
}

// BenchmarkREPLDump and BenchmarkREPLLoad measure the interpreter's part
// of saving and loading a session of 10, 300 or 1,000 snippets (package
// sessionbench): runtime.REPL.Dump of a REPL fed them, and
// Interpreter.LoadREPL of that dump into another interpreter, the
// counterparts of upstream's session dump and load.
func BenchmarkREPLDump(b *testing.B) {
	benchREPL(b, func(b *testing.B, r *runtime.REPL, _ *runtime.Interpreter) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := r.Dump(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkREPLLoad: see BenchmarkREPLDump.
func BenchmarkREPLLoad(b *testing.B) {
	benchREPL(b, func(b *testing.B, r *runtime.REPL, dst *runtime.Interpreter) {
		ctx := context.Background()
		dump, err := r.Dump(ctx)
		require.NoError(b, err)
		for b.Loop() {
			loaded, _, err := dst.LoadREPL(ctx, dump)
			if err != nil {
				b.Fatal(err)
			}
			loaded.Close()
		}
	})
}

// benchREPL runs bench as sub-benchmarks snippet=N, each with a REPL fed
// the first N snippets and a second interpreter.
func benchREPL(b *testing.B, bench func(b *testing.B, r *runtime.REPL, dst *runtime.Interpreter)) {
	ctx := context.Background()
	eng, err := runtime.Default(ctx)
	require.NoError(b, err)
	for _, n := range sessionbench.Sizes {
		b.Run(fmt.Sprintf("snippet=%d", n), func(b *testing.B) {
			src, err := eng.NewInterpreter(ctx)
			require.NoError(b, err)
			defer src.Close(ctx)
			dst, err := eng.NewInterpreter(ctx)
			require.NoError(b, err)
			defer dst.Close(ctx)
			r, err := src.NewREPL(ctx)
			require.NoError(b, err)
			defer r.Close()
			for i := 1; i <= n; i++ {
				v, err := r.Run(ctx, sessionbench.Snippet(i))
				require.NoError(b, err)
				require.Equal(b, sessionbench.Value(i), object.Repr(v))
			}
			bench(b, r, dst)
		})
	}
}
