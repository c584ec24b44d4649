module github.com/monty-go/monty/scripts/faults

go 1.26.0

require (
	github.com/Shopify/toxiproxy/v2 v2.5.0
	github.com/anishathalye/porcupine v1.3.1
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.37.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

require (
	github.com/coder/websocket v1.8.14
	github.com/monty-go/monty v0.0.0
	google.golang.org/protobuf v1.36.12
)

require github.com/tetratelabs/wazero v1.12.0 // indirect

// The monty.v1 workload speaks the protocol with the repository's own
// schema and value arenas.
replace github.com/monty-go/monty => ../..
