package tools_test

// The tests type-check on wazero: they link checker.wasm, which package
// typecheck does not carry itself.
import _ "github.com/monty-go/monty/runtime/typecheck/embedded"
