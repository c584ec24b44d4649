package main

// scripts/aotgo.sh adds this file to cmd/monty (make monty-aot,
// docs/building.md): the CLI then runs the interpreter and the type
// checker translated to Go ahead of time instead of compiling monty.wasm
// and checker.wasm with wazero.
import (
	_ "github.com/monty-go/monty/wasm/aot"
	_ "github.com/monty-go/monty/wasm/aot/checker"
)
