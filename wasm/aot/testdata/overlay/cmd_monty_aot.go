package main

// scripts/aotgo.sh adds this file to cmd/monty (make monty-aot,
// docs/building.md): the CLI then runs the interpreter translated to Go
// ahead of time instead of compiling monty.wasm with wazero.
import _ "github.com/monty-go/monty/wasm/aot"
