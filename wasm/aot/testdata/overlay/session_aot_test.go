package session_test

// scripts/aotgo.sh adds this file to session's tests (make test-aot): they
// then run on the module translated to Go.
import _ "github.com/monty-go/monty/wasm/aot"
