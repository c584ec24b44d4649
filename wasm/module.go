//go:build !monty_noembed

package wasm

import _ "embed"

// Module is the compiled interpreter module. It must not be modified.
// Empty in a program built with the tag monty_noembed.
//
//go:embed monty.wasm
var Module []byte

// Embedded reports whether Module holds the module: false in a program
// built with the tag monty_noembed.
const Embedded = true
