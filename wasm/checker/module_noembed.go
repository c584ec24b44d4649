//go:build monty_checker_noembed

package checker

// Module is empty: this program was built with the tag
// monty_checker_noembed, to run the type checker translated to Go ahead
// of time only.
var Module []byte

// Embedded reports whether Module holds the module: false in a program
// built with the tag monty_checker_noembed.
const Embedded = false
