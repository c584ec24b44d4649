package main

// scripts/aotgo.sh adds this file to scripts/conformance
// (MONTY_CONFORMANCE_AOT=1 scripts/conformance.sh): the cases then run on
// the module translated to Go.
import _ "github.com/monty-go/monty/wasm/aot"
