package main

// scripts/aotgo.sh adds this file to examples/serverless (docs/http.md,
// "Serverless"): the function then runs the interpreter translated to Go
// ahead of time, and starts without a compilation cache.
import _ "github.com/monty-go/monty/wasm/aot"
