//go:build monty_aot

package main

// Built with -tags monty_aot (scripts/conformance.sh with
// MONTY_CONFORMANCE_AOT=1), the cases run on the module translated to Go.
import _ "github.com/monty-go/monty/wasm/aot"
