package servetest

import (
	"testing"
	"time"

	"github.com/monty-go/monty/cmd/monty/clienttest"
)

// TestAGUIClient: testdata/clients/agui_stream.py, an AG-UI client built
// on the ag-ui-protocol package's models, streams a plain run, a run that
// pauses at client tools and its resumes from monty serve, validating
// every frame with ag_ui.core and the runs' order: a paused run ends with
// an interrupt outcome whose tool call ids the resume takes, a completed
// one with success, and a resume of a run no longer paused gets the JSON
// answer's 4xx before any frame.
func TestAGUIClient(t *testing.T) {
	const key = "agui-client-key"
	in := serve(t, "--store", "mem:", "--api-key", key)
	out := clienttest.Run(t, 2*time.Minute, []string{"MONTY_API_KEY=" + key}, "agui_stream.py", in.url)
	t.Log(out)
}
