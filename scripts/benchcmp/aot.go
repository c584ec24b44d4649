//go:build monty_aot

package main

// Built with -tags monty_aot, benchcmp links the module translated to Go
// and measures it in an aot column beside the go column on wazero.
import _ "github.com/monty-go/monty/wasm/aot"

func init() { aotLinked = true }
