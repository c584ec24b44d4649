package main

// scripts/aotgo.sh adds this file to scripts/bench/benchcmp (scripts/bench/aot.sh):
// benchcmp then links the module translated to Go and measures it in an
// aot column beside the go column on wazero.
import _ "github.com/monty-go/monty/wasm/aot"

func init() { aotLinked = true }
