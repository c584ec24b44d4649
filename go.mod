module github.com/monty-go/monty

go 1.26.0

require (
	github.com/klauspost/compress v1.19.2
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/stretchr/testify v1.12.1
	github.com/tetratelabs/wazero v1.12.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
