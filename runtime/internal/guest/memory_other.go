//go:build !(linux || darwin)

package guest

import "errors"

// CanInterrupt reports whether Interrupt can stop code running in a
// reservation: not on systems without mmap.
const CanInterrupt = false

// Reserve reserves nothing on systems without mmap: a translated
// instance's linear memory lives on the Go heap.
func Reserve(uint64) []byte { return nil }

// Interrupt cannot take access rights away here.
func Interrupt([]byte) error { return errors.New("no memory protection on this system") }

// Free has nothing to free.
func Free([]byte) {}
