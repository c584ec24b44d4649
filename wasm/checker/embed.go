// Package checker holds Monty's type checker (the monty-type-checking
// crate: ty's analysis against the typeshed subset Monty implements)
// compiled to WebAssembly (wasm32-wasip1), built from the Rust shim in this
// directory by `make wasm` and committed so that Go users never need Rust.
// It is a package of its own so that programs that never type-check do not
// carry it; runtime/typecheck runs it. A program built with the tag
// monty_checker_noembed does not embed it either (Module is empty): one
// that links the checker translated to Go ahead of time
// (github.com/monty-go/monty/wasm/aot/checker) saves its 16.5 MB
// (docs/building.md#carrying-only-what-runs).
//
// The module's SHA-256 is in checker.wasm.sha256 and a stamp of the inputs
// it was built from in checker.wasm.stamp; the package's tests fail when
// either no longer matches. docs/abi.md describes the module's exports.
package checker

import (
	_ "embed"
	"strings"
)

//go:embed checker.wasm.sha256
var checksumFile string

// SHA256 is Module's SHA-256 in hex (from checker.wasm.sha256, which the
// package's tests check against Module).
var SHA256, _, _ = strings.Cut(checksumFile, " ")
