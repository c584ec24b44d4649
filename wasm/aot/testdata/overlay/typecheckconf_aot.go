package main

// scripts/aotgo.sh adds this file to scripts/typecheckconf
// (MONTY_TYPECHECK_AOT=1 scripts/typecheck-conformance.sh): the cases then
// run on the type checker translated to Go ahead of time.
import _ "github.com/monty-go/monty/wasm/aot/checker"
