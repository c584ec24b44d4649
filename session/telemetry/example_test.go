package telemetry_test

import (
	"context"
	"fmt"
	"log"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/telemetry"
)

// A session reporting to a tracer provider of its own: the execution's
// span, its check of the stored version's, its host call's and its store
// write's, in the order they end.
func ExampleNew() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)

	host := &runtime.Host{Functions: map[string]runtime.Function{
		"double": {Func: func(_ context.Context, args []object.Value, _ []object.Pair) (object.Value, error) {
			return 2 * args[0].(object.Int), nil
		}},
	}}
	s, err := session.Open(ctx, "example", session.Options{
		Store:     memstore.New(memstore.Options{}),
		Host:      host,
		Telemetry: telemetry.New(telemetry.Options{TracerProvider: tp}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)
	if _, err := s.Exec(ctx, "x = double(21)"); err != nil {
		log.Fatal(err)
	}
	for _, span := range spans.GetSpans() {
		fmt.Println(span.Name)
	}
	// Output:
	// monty.store.stat
	// monty.host_call
	// monty.store.put
	// monty.execute
}
