//go:build monty_aot

package main

// Built with -tags monty_aot (make monty-aot, docs/building.md), the CLI
// runs the interpreter translated to Go ahead of time instead of compiling
// monty.wasm with wazero.
import _ "github.com/monty-go/monty/wasm/aot"
