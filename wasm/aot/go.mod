module github.com/monty-go/monty/wasm/aot

go 1.26.0

require github.com/monty-go/monty v0.0.0

require (
	github.com/tetratelabs/wazero v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/monty-go/monty => ../..
