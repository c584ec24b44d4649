//go:build monty_noembed

package wasm

// Module is empty: this program was built with the tag monty_noembed, to
// run the interpreter translated to Go ahead of time only.
var Module []byte

// Embedded reports whether Module holds the module: false in a program
// built with the tag monty_noembed.
const Embedded = false
