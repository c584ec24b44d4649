package runtime

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

	"github.com/monty-go/monty/wasm"
)

// CacheDirEnv names the environment variable that chooses where the default
// engine and the monty command cache compiled machine code (see
// [DefaultCacheDir]); the value "off" turns the cache off.
const CacheDirEnv = "MONTY_CACHE_DIR"

// CacheOff is the value of MONTY_CACHE_DIR that turns the cache off.
const CacheOff = "off"

// pinnedWazeroVersion is the wazero version go.mod requires. The cache key
// uses the version recorded in the binary's build information; test
// binaries carry none, and fall back to this (a test checks it against
// go.mod).
const pinnedWazeroVersion = "v1.12.0"

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

// DefaultCacheDir returns the directory where compiled machine code is
// cached unless an engine is told otherwise: $MONTY_CACHE_DIR when set, else
// "monty-go/compiled" under the user's cache directory ([os.UserCacheDir],
// e.g. ~/.cache on Linux). It returns "" when caching is off
// (MONTY_CACHE_DIR=off) or the user has no cache directory (no $HOME), in
// which case every process compiles the module again.
func DefaultCacheDir() string {
	if dir, ok := os.LookupEnv(CacheDirEnv); ok && dir != "" {
		if strings.EqualFold(dir, CacheOff) {
			return ""
		}
		return dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "monty-go", "compiled")
}

// moduleCache is the cache entry of one module in a cache directory.
type moduleCache struct {
	root  string // the cache directory
	entry string // root/module-…
	// warm reports that the entry holds finished machine code.
	warm bool
}

// openModuleCache prepares the entry of module under root. A warm entry is
// used even when it cannot be written (a read-only image); a cold one must
// be writable, else the error says why it cannot be used.
func openModuleCache(root string, module []byte) (*moduleCache, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c := &moduleCache{root: root}
	version, own := wazeroVersions()
	if own != version {
		// wazero names its files by another version (test binaries): their
		// own entry, so that the ready mark speaks for the files inside.
		version += "-" + own
	}
	c.entry = filepath.Join(root, fmt.Sprintf("%s%s-%s-%s-%s", cacheEntryPrefix,
		moduleHash(module)[:16], version, goruntime.GOOS, goruntime.GOARCH))
	if _, err := os.Stat(filepath.Join(c.entry, cacheReadyFile)); err == nil {
		c.warm = true
		now := time.Now()
		_ = os.Chtimes(filepath.Join(c.entry, cacheReadyFile), now, now) // last use; fails harmlessly when read-only
		return c, nil
	}
	if err := os.MkdirAll(c.entry, 0o700); err != nil {
		return nil, err
	}
	probe, err := os.CreateTemp(c.entry, ".probe-*")
	if err != nil {
		return nil, err
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		return nil, err
	}
	return c, nil
}

// markReady records that the entry holds machine code and removes the
// entries least recently used beyond keepCacheEntries (errors only make the
// directory larger than it needs to be).
func (c *moduleCache) markReady() error {
	tmp, err := os.CreateTemp(c.entry, ".ready-*")
	if err != nil {
		return err
	}
	_, werr := fmt.Fprintf(tmp, "monty-go compiled module cache entry\nwazero %s\n", linkedWazeroVersion())
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(c.entry, cacheReadyFile)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	c.warm = true
	c.prune()
	return nil
}

// clear empties the entry so that the next compilation writes it afresh.
func (c *moduleCache) clear() error {
	c.warm = false
	if err := os.RemoveAll(c.entry); err != nil {
		return err
	}
	return os.MkdirAll(c.entry, 0o700)
}

// prune removes the entries of other module versions beyond the
// keepCacheEntries most recently used (the current one always stays).
// Directories not named like entries are left alone.
func (c *moduleCache) prune() {
	dirents, err := os.ReadDir(c.root)
	if err != nil {
		return
	}
	type entry struct {
		path string
		used time.Time
	}
	var others []entry
	for _, d := range dirents {
		path := filepath.Join(c.root, d.Name())
		if !d.IsDir() || !strings.HasPrefix(d.Name(), cacheEntryPrefix) || path == c.entry {
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

// moduleHash is the module's SHA-256 in hex: the committed checksum for the
// embedded module (hashing it costs several milliseconds of every start).
func moduleHash(module []byte) string {
	if len(module) == len(wasm.Module) && len(module) > 0 && &module[0] == &wasm.Module[0] {
		return wasm.SHA256
	}
	sum := sha256.Sum256(module)
	return hex.EncodeToString(sum[:])
}

// linkedWazeroVersion is the first of wazeroVersions.
func linkedWazeroVersion() string {
	linked, _ := wazeroVersions()
	return linked
}

// wazeroVersions reads, once, the wazero version linked into this binary
// (linked: from the build information, else pinnedWazeroVersion) and the
// version wazero itself files its cache under (own: by wazero's rule, the
// dependency's version, else the main module's, else "dev" — what test
// binaries, carrying no dependency versions, get whatever wazero they link).
var wazeroVersions = sync.OnceValues(func() (linked, own string) {
	linked, own = pinnedWazeroVersion, "dev"
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
