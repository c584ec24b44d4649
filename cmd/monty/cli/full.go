//go:build !monty_lean

package cli

// build is what monty version says of this build: everything, where a
// build with the monty_lean tag leaves the servers out (lean.go).
const build = "full"

// leftOut is nil: this build has every command and flag.
func leftOut(string) error { return nil }
