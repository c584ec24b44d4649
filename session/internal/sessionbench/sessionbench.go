// Package sessionbench is the workload of the continuing-session
// benchmarks of package session (the Go API), session/httpapi (POST /exec)
// and session/mcpserver (execute_python): one session continued snippet
// after snippet, each snippet defining a new small function and computing
// a value with it, so that the session's state grows with its history as an
// agent's does.
//
// Run measures the snippets that follow the 10th, 300th and 1,000th
// (sub-benchmarks snippet=10, snippet=300 and snippet=1000) through a
// Surface, from the public API of what it measures only. The session is
// built up to each size once: what the store holds at each size is kept in
// this process and, when MONTY_BENCH_CACHE names a directory, in a file
// there for the next process of the same run (scripts/bench/table.sh runs the
// sizes in rounds, a process per round, and gives every run a new
// directory: the cache is only ever read by the build that wrote it).
package sessionbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/monty-go/monty/session/store"
)

// CacheEnv names the environment variable holding the directory where
// built states are kept between processes.
const CacheEnv = "MONTY_BENCH_CACHE"

// Sizes are the numbers of earlier snippets the benchmarks continue from.
var Sizes = []int{10, 300, 1000}

// Batch is how many snippets are timed in a row before the session is put
// back to its size, so that every timed snippet follows about as many
// earlier ones as the size says.
const Batch = 20

// Snippet is the ith snippet of the session (from 1): it defines f{i},
// binds v{i} to f{i}(i) and evaluates to it.
func Snippet(i int) string {
	return fmt.Sprintf("def f%[1]d(x):\n    return x * %[1]d + len(str(x))\nv%[1]d = f%[1]d(%[1]d)\nv%[1]d", i)
}

// Value is the repr of the value of Snippet(i) (and of v{i} after it).
func Value(i int) string { return strconv.Itoa(i*i + len(strconv.Itoa(i))) }

// Entries are the blobs a store holds, by id.
type Entries map[string][]byte

// States are the entries holding the session after each of Sizes'
// snippets, by size.
type States map[int]Entries

// A Surface runs one session through what a benchmark measures.
type Surface interface {
	// Exec runs code in the session and returns the repr of its value.
	Exec(code string) (string, error)
	// Save returns what holds the session's state now.
	Save() (Entries, error)
	// Restore makes the session continue from entries, as Save returned
	// them, at its next Exec.
	Restore(Entries) error
}

// Run runs the sub-benchmarks snippet=N of b for each of Sizes on s: the
// session is put back to its first N snippets, untimed, and the snippets
// after it are timed one per iteration, Batch of them before the next
// put-back. The put-back ends with an untimed call that reads v{N} (it
// checks that the session continues its history, and lets a surface that
// keeps hot sessions warm the one it restored). name names the surface in
// the cache and in progress messages.
func Run(b *testing.B, name string, s Surface) {
	states, err := Build(name, s)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range Sizes {
		b.Run(fmt.Sprintf("snippet=%d", n), func(b *testing.B) {
			next := 0
			for b.Loop() {
				if next == 0 || next > n+Batch {
					b.StopTimer()
					if err := putBack(s, states[n], n); err != nil {
						b.Fatal(err)
					}
					next = n + 1
					b.StartTimer()
				}
				got, err := s.Exec(Snippet(next))
				if err != nil {
					b.Fatalf("snippet %d: %v", next, err)
				}
				if want := Value(next); got != want {
					b.Fatalf("snippet %d returned %s, want %s", next, got, want)
				}
				next++
			}
		})
	}
}

// putBack restores the session to entries, which hold its first n snippets,
// and checks that it reads v{n}.
func putBack(s Surface, entries Entries, n int) error {
	if err := s.Restore(entries); err != nil {
		return fmt.Errorf("restoring the session of %d snippets: %w", n, err)
	}
	got, err := s.Exec(fmt.Sprintf("v%d", n))
	if err != nil {
		return fmt.Errorf("reading v%d after restoring the session: %w", n, err)
	}
	if want := Value(n); got != want {
		return fmt.Errorf("v%d is %s after restoring the session, want %s", n, got, want)
	}
	return nil
}

var (
	mu    sync.Mutex
	built = map[string]States{}
)

// Build returns the states of surface name at each of Sizes: from this
// process's cache, from MONTY_BENCH_CACHE, or built by running the
// snippets through s (Sizes[len(Sizes)-1] of them; progress to stderr).
// The session must be empty when it builds.
func Build(name string, s Surface) (States, error) {
	mu.Lock()
	defer mu.Unlock()
	if st, ok := built[name]; ok {
		return st, nil
	}
	file := ""
	if dir := os.Getenv(CacheEnv); dir != "" {
		file = filepath.Join(dir, name+".json")
		if st, err := readStates(file); err == nil {
			built[name] = st
			return st, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	st := States{}
	last := Sizes[len(Sizes)-1]
	start := time.Now()
	for i := 1; i <= last; i++ {
		got, err := s.Exec(Snippet(i))
		if err != nil {
			return nil, fmt.Errorf("%s: building the session: snippet %d: %w", name, i, err)
		}
		if want := Value(i); got != want {
			return nil, fmt.Errorf("%s: building the session: snippet %d returned %s, want %s", name, i, got, want)
		}
		if slices.Contains(Sizes, i) {
			if st[i], err = s.Save(); err != nil {
				return nil, fmt.Errorf("%s: saving the session of %d snippets: %w", name, i, err)
			}
		}
		if i%100 == 0 || i == last {
			fmt.Fprintf(os.Stderr, "sessionbench: %s: %d of %d snippets (%.1f s)\n", name, i, last, time.Since(start).Seconds())
		}
	}
	if file != "" {
		if err := writeStates(file, st); err != nil {
			return nil, err
		}
	}
	built[name] = st
	return st, nil
}

func readStates(file string) (States, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var st States
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, n := range Sizes {
		if st[n] == nil {
			return nil, fmt.Errorf("%s holds no session of %d snippets", file, n)
		}
	}
	return st, nil
}

// writeStates writes st to file through a temporary file, so that a
// reader never sees half of it.
func writeStates(file string, st States) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// StoreEntries returns every blob st holds.
func StoreEntries(ctx context.Context, st store.Store) (Entries, error) {
	infos, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	out := Entries{}
	for _, info := range infos {
		obj, err := st.Get(ctx, info.ID)
		if err != nil {
			return nil, err
		}
		out[info.ID] = obj.Data
	}
	return out, nil
}

// ReplaceEntries makes st hold entries and nothing else.
func ReplaceEntries(ctx context.Context, st store.Store, entries Entries) error {
	infos, err := st.List(ctx)
	if err != nil {
		return err
	}
	for _, info := range infos {
		if err := st.Delete(ctx, info.ID); err != nil {
			return err
		}
	}
	for id, data := range entries {
		if _, err := st.Put(ctx, id, data, store.Cond{}); err != nil {
			return err
		}
	}
	return nil
}
