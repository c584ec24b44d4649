// Package wasm holds the Monty interpreter compiled to WebAssembly
// (wasm32-wasip1), built from the Rust shim in this directory by
// `make wasm` and committed so that Go users never need Rust.
//
// A program built with the tag monty_noembed does not embed it (Module is
// empty): one that links the interpreter translated to Go ahead of time
// (github.com/monty-go/monty/wasm/aot) and never runs the module on wazero
// saves its 11 MB (docs/building.md#carrying-only-what-runs).
//
// The module's SHA-256 is in monty.wasm.sha256 and a stamp of the inputs it
// was built from is in monty.wasm.stamp; the package's tests fail when either
// no longer matches. docs/abi.md describes the module's exports and imports.
package wasm

import (
	_ "embed"
	"strings"
)

//go:embed monty.wasm.sha256
var checksumFile string

// SHA256 is Module's SHA-256 in hex (from monty.wasm.sha256, which the
// package's tests check against Module), so that users keying caches by
// the module need not hash 11 MB at every start.
var SHA256, _, _ = strings.Cut(checksumFile, " ")

// MontyVersion is the version of the monty crates the module is built
// from (wasm/Cargo.toml pins it; the package's tests check that), for
// programs that name it without starting an engine (monty version).
// runtime.Engine.MontyVersion is the version the module itself reports.
const MontyVersion = "1.4.0"
