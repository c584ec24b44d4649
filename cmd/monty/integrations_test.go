package main_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/monty-go/monty/cmd/monty/clienttest"
)

// TestIntegrations runs testdata/clients/integrations/run.py: seven
// integrations built on pydantic-monty, unmodified and without an LLM
// (pydantic-ai-harness's CodeMode through a FunctionModel, FastMCP's
// CodeMode through its in-memory Client, the Haystack, LangChain and DSPy
// tools called directly, fluss-monty's flow validation and runs,
// monty-compat's probe catalog and its runner's kill and recovery), each against upstream's worker and ours, and
// fails on any difference in what their users see that
// integrations/known.py does not list, on a listed one that no longer
// differs, and on a run whose workers were not the binary it was given.
func TestIntegrations(t *testing.T) {
	py := clienttest.IntegrationsPython(t)
	upstream := filepath.Join(filepath.Dir(py), "monty")
	out := clienttest.RunWith(t, py, 12*time.Minute, nil, "integrations/run.py", upstream, binary)
	t.Log(out)
}
