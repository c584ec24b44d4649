//go:build !(linux || darwin)

package runtime

import "context"

// withMemoryAllocator keeps wazero's default linear memory on systems
// without the mmap-based one.
func withMemoryAllocator(ctx context.Context) context.Context { return ctx }
