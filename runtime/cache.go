package runtime

import (
	"os"
	"os/user"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"github.com/monty-go/monty/runtime/internal/modcache"
	"github.com/monty-go/monty/wasm"
)

// CacheDirEnv names the environment variable that chooses where the default
// engine and the monty command cache compiled machine code (see
// [DefaultCacheDir]); the value "off" turns the cache off.
const CacheDirEnv = "MONTY_CACHE_DIR"

// CacheOff is the value of MONTY_CACHE_DIR that turns the cache off.
const CacheOff = "off"

// DefaultCacheDir returns the directory where compiled machine code is
// cached unless an engine is told otherwise: $MONTY_CACHE_DIR when set, else
// "monty-go/compiled" under the user's cache directory ([os.UserCacheDir],
// e.g. ~/.cache on Linux). It returns "" when caching is off
// (MONTY_CACHE_DIR=off) or the user has no cache directory, in which case
// every process compiles the module again. A process started with an empty
// environment (pydantic-monty starts its `monty subprocess` workers so)
// finds the user's home directory in the user database instead of $HOME.
func DefaultCacheDir() string {
	if dir, ok := os.LookupEnv(CacheDirEnv); ok && dir != "" {
		if strings.EqualFold(dir, CacheOff) {
			return ""
		}
		return dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		if base = homeCacheDir(); base == "" {
			return ""
		}
	}
	return filepath.Join(base, "monty-go", "compiled")
}

// homeCacheDir is the user's cache directory found through the user
// database, for a process whose environment names none; "" if unknown.
func homeCacheDir() string {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" || !filepath.IsAbs(u.HomeDir) {
		return ""
	}
	switch goruntime.GOOS {
	case "darwin", "ios":
		return filepath.Join(u.HomeDir, "Library", "Caches")
	case "windows", "plan9", "js", "wasip1":
		return ""
	}
	return filepath.Join(u.HomeDir, ".cache")
}

// moduleHash is the module's SHA-256 in hex: the committed checksum for the
// embedded module (hashing it costs several milliseconds of every start).
func moduleHash(module []byte) string {
	if isEmbeddedModule(module) {
		return wasm.SHA256
	}
	return modcache.Hash(module)
}

// isEmbeddedModule reports whether module is the embedded one itself (not a
// copy); in a program built with the tag monty_noembed, whether it is the
// empty default that stands for the module not carried.
func isEmbeddedModule(module []byte) bool {
	if !wasm.Embedded {
		return len(module) == 0
	}
	return len(module) == len(wasm.Module) && len(module) > 0 && &module[0] == &wasm.Module[0]
}
