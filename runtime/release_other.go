//go:build !linux

package runtime

// releaseModulePages is a no-op where the embedded module's pages cannot be
// handed back safely (see release_linux.go).
func releaseModulePages([]byte) {}
