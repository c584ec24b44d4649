//go:build !monty_checker_noembed

package checker

import _ "embed"

// Module is the compiled type checker module. It must not be modified.
// Empty in a program built with the tag monty_checker_noembed.
//
//go:embed checker.wasm
var Module []byte

// Embedded reports whether Module holds the module: false in a program
// built with the tag monty_checker_noembed.
const Embedded = true
