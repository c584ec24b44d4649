//go:build !(linux || darwin)

package runtime

// reserveMemory reserves nothing on systems without mmap: a translated
// instance's linear memory lives on the Go heap.
func reserveMemory(uint64) []byte { return nil }

// freeMemory has nothing to free.
func freeMemory([]byte) {}
