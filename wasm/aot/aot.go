// Package aot links the Monty interpreter translated to Go ahead of time
// (wasm2go of wasm/monty.wasm) into a program. Importing it is the whole
// opt-in:
//
//	import _ "github.com/monty-go/monty/wasm/aot"
//
// Engines of package runtime then run the translated module instead of
// compiling monty.wasm with wazero: a fresh process has an interpreter in
// milliseconds, with nothing compiled or cached at run time. The translated
// package is 78 MB of Go that is generated, not committed: run `make aot`
// in the repository first, and build with the flags scripts/aotgo.sh uses
// (compiling it needs about 10 GB of memory; docs/building.md).
package aot

import (
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/wasm/aot/internal/translated"
)

// ModuleSHA256 is the SHA-256 of the monty.wasm the linked translation was
// generated from; engines refuse it unless it is the module package
// runtime embeds.
const ModuleSHA256 = translated.WasmSHA256

func init() {
	runtime.RegisterAOT(ModuleSHA256, func(imports runtime.AOTImports) runtime.AOTInstance {
		return translated.New(imports, imports)
	})
}
