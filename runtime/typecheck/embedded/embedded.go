// Package embedded links the type checker module, checker.wasm (16.5 MB),
// into a program, for package typecheck to compile with wazero. Importing
// it is the whole opt-in:
//
//	import _ "github.com/monty-go/monty/runtime/typecheck/embedded"
//
// Package typecheck does not carry the module itself, so that a program
// that uses sessions, agents or the HTTP API but never type-checks goes
// without it; one that type-checks imports this package, or the checker
// translated to Go ahead of time (github.com/monty-go/monty/wasm/aot/checker),
// or both: the translation then runs where it can (everywhere but Windows),
// and the module where it cannot, or when asked for (typecheck.WithWazero).
// Without either, a check fails with typecheck.ErrNoModule.
package embedded

import (
	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/wasm/checker"
)

func init() { typecheck.RegisterModule(checker.Module) }
