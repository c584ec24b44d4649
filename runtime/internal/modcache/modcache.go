// Package modcache keeps compiled machine code of wasm modules on disk,
// one entry per module, wazero version, OS and architecture, so that later
// processes load it instead of compiling again. The runtime package uses it
// for the interpreter module and runtime/typecheck for the checker module.
package modcache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
)

// PinnedWazeroVersion is the wazero version go.mod requires. The cache key
// uses the version recorded in the binary's build information; test
// binaries carry none, and fall back to this (a test checks it against
// go.mod).
const PinnedWazeroVersion = "v1.12.0"

// Cache layout, under the cache directory:
//
//	module-<sha256 of the module, 16 hex>-<wazero version>-<GOOS>-<GOARCH>/
//	    (test binaries add wazero's own name for its version, "dev")
//	    ready              written once the machine code is stored; its
//	                       modification time is the entry's last use
//	    wazero-…/<key>     wazero's own file cache (its key adds CPU features)
//
// One entry per module version and wazero version, so another module,
// wazero, OS or CPU never reuses machine code; entries other than the
// keepCacheEntries most recently used are removed after each compilation.
const (
	cacheEntryPrefix = "module-"
	cacheReadyFile   = "ready"
	keepCacheEntries = 6
)

// Entry is the cache entry of one module in a cache directory. It is not
// safe for concurrent use; separate Entries of one directory (other
// processes included) may fill and use it at the same time.
type Entry struct {
	// Root is the cache directory.
	Root string
	// Dir is the entry's directory, Root/module-…, for
	// wazero.NewCompilationCacheWithDir.
	Dir string
	// Warm reports that the entry holds finished machine code.
	Warm bool
}

// Open prepares the entry of the module whose SHA-256 (hex) is hash under
// root. A warm entry is
// used even when it cannot be written (a read-only image); a cold one must
// be writable, else the error says why it cannot be used.
func Open(root, hash string) (*Entry, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c := &Entry{Root: root}
	version, own := wazeroVersions()
	if own != version {
		// wazero names its files by another version (test binaries): their
		// own entry, so that the ready mark speaks for the files inside.
		version += "-" + own
	}
	c.Dir = filepath.Join(root, fmt.Sprintf("%s%s-%s-%s-%s", cacheEntryPrefix,
		hash[:min(16, len(hash))], version, goruntime.GOOS, goruntime.GOARCH))
	if _, err := os.Stat(filepath.Join(c.Dir, cacheReadyFile)); err == nil {
		c.Warm = true
		now := time.Now()
		_ = os.Chtimes(filepath.Join(c.Dir, cacheReadyFile), now, now) // last use; fails harmlessly when read-only
		return c, nil
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	probe, err := os.CreateTemp(c.Dir, ".probe-*")
	if err != nil {
		return nil, err
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		return nil, err
	}
	return c, nil
}

// MarkReady records that the entry holds machine code and removes the
// entries least recently used beyond keepCacheEntries (errors only make the
// directory larger than it needs to be).
func (c *Entry) MarkReady() error {
	tmp, err := os.CreateTemp(c.Dir, ".ready-*")
	if err != nil {
		return err
	}
	_, werr := fmt.Fprintf(tmp, "monty-go compiled module cache entry\nwazero %s\n", LinkedWazeroVersion())
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(c.Dir, cacheReadyFile)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	c.Warm = true
	c.prune()
	return nil
}

// Clear empties the entry so that the next compilation writes it afresh.
func (c *Entry) Clear() error {
	c.Warm = false
	if err := os.RemoveAll(c.Dir); err != nil {
		return err
	}
	return os.MkdirAll(c.Dir, 0o700)
}

// prune removes the entries of other module versions beyond the
// keepCacheEntries most recently used (the current one always stays).
// Directories not named like entries are left alone.
func (c *Entry) prune() {
	dirents, err := os.ReadDir(c.Root)
	if err != nil {
		return
	}
	type entry struct {
		path string
		used time.Time
	}
	var others []entry
	for _, d := range dirents {
		path := filepath.Join(c.Root, d.Name())
		if !d.IsDir() || !strings.HasPrefix(d.Name(), cacheEntryPrefix) || path == c.Dir {
			continue
		}
		// An entry without a ready file is being filled, or was abandoned:
		// its directory's time stands for its use.
		info, err := os.Stat(filepath.Join(path, cacheReadyFile))
		if err != nil {
			if info, err = os.Stat(path); err != nil {
				continue
			}
		}
		others = append(others, entry{path, info.ModTime()})
	}
	slices.SortFunc(others, func(a, b entry) int { return b.used.Compare(a.used) })
	for _, e := range others[min(len(others), keepCacheEntries-1):] {
		_ = os.RemoveAll(e.path)
	}
}

// LinkedWazeroVersion is the wazero version linked into this binary (from
// its build information, else PinnedWazeroVersion).
func LinkedWazeroVersion() string {
	linked, _ := wazeroVersions()
	return linked
}

// wazeroVersions reads, once, the wazero version linked into this binary
// (linked: from the build information, else PinnedWazeroVersion) and the
// version wazero itself files its cache under (own: by wazero's rule, the
// dependency's version, else the main module's, else "dev" — what test
// binaries, carrying no dependency versions, get whatever wazero they link).
var wazeroVersions = sync.OnceValues(func() (linked, own string) {
	linked, own = PinnedWazeroVersion, "dev"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return linked, own
	}
	known := func(v string) bool { return v != "" && v != "(devel)" }
	for _, d := range info.Deps {
		if !strings.Contains(d.Path, "github.com/tetratelabs/wazero") {
			continue
		}
		own = d.Version // wazero's rule ignores replacements
		if d.Replace != nil && known(d.Replace.Version) {
			linked = d.Replace.Version
		} else if known(d.Version) {
			linked = d.Version
		}
	}
	if !known(own) {
		own = "dev"
		if known(info.Main.Version) {
			own = info.Main.Version
		}
	}
	return linked, own
})

// Hash is a module's SHA-256 in hex, the key of its entry.
func Hash(module []byte) string {
	sum := sha256.Sum256(module)
	return hex.EncodeToString(sum[:])
}
