//go:build !linux

// Package pages hands the resident pages of an embedded wasm module back to
// the kernel once an engine has compiled it (Linux only).
package pages

// Release does nothing where dropping the pages of embedded data is not
// known to be safe (see pages_linux.go).
func Release([]byte) {}
