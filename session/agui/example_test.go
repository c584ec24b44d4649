package agui_test

import (
	"context"
	"encoding/json"
	"os"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/agui"
	"github.com/monty-go/monty/session/store/memstore"
)

// Stream an execute_python run to an AG-UI client as server-sent events.
func ExampleAdapter_Sink() {
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper})
	if err != nil {
		panic(err)
	}
	defer keeper.Close()
	// In an HTTP handler, w would be the response writer.
	w := os.Stdout
	sink := agui.Adapter{ThreadID: "thread-1", RunID: "run-1"}.Sink(func(e agui.Event) {
		// Timestamps vary; drop them for the example's output.
		switch e := e.(type) {
		case *agui.RunStartedEvent:
			e.Timestamp = 0
		case *agui.RunFinishedEvent:
			e.Timestamp = 0
		}
		_ = agui.WriteSSE(w, e)
	})
	_, err = exec.ExecuteEvents(context.Background(), "thread-1", json.RawMessage(`{"code": "6 * 7"}`), sink)
	if err != nil {
		panic(err)
	}
	// Output:
	// data: {"type":"RUN_STARTED","threadId":"thread-1","runId":"run-1","protocolVersion":"1.0"}
	//
	// data: {"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","result":42}
}
