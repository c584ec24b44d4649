package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP workload: two `monty mcp` processes (an agent's MCP server each,
// over stdio) share the store; sessions are execute_python's session_id,
// and each append is a call with an idempotency_key, retried on the other
// process when a call fails or its process dies. Their claims on a session
// are the same leases in the store as the HTTP API's and monty.v1's. The
// final read is an execute_python of `log`; the checker's rules are the
// appends'.

// mcpServer is one `monty mcp` process and the client session talking to
// it.
type mcpServer struct {
	name string // "mcp://N", the name the error policy knows it by
	args []string
	env  []string
	log  string

	mu  sync.Mutex
	cmd *exec.Cmd
	cs  *mcp.ClientSession
}

// start starts the process (again) and connects to it.
func (m *mcpServer) start(ctx context.Context) error {
	cmd, f, err := command(m.args, m.env, m.log)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "monty-faults", Version: "1"}, nil).Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		f.Close()
		return fmt.Errorf("%s: connecting: %w", m.name, err)
	}
	go func() { _ = cs.Wait(); f.Close() }()
	m.mu.Lock()
	m.cmd, m.cs = cmd, cs
	m.mu.Unlock()
	return nil
}

// kill SIGKILLs the process, as a crash would.
func (m *mcpServer) kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && m.cmd.Process != nil {
		_ = m.cmd.Process.Kill()
	}
}

// close ends the session, which stops the process.
func (m *mcpServer) close() {
	m.mu.Lock()
	cs := m.cs
	m.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

func (m *mcpServer) session() *mcp.ClientSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cs
}

// startMCPServers starts the two `monty mcp` processes of a scenario on
// the store spec.
func (e *env) startMCPServers(ctx context.Context, scenario, spec string) ([]*mcpServer, error) {
	var out []*mcpServer
	for i := range 2 {
		m := &mcpServer{name: fmt.Sprintf("mcp://%d", i),
			args: []string{e.cfg.monty, "mcp", "--store", spec, "--api-key", apiKey, "--max-duration", fmt.Sprintf("%dms", e.cfg.limitMS)},
			env:  []string{"MONTY_SIGNING_KEY=faults-signing-key-0123456789abcdef"},
			log:  filepath.Join(e.cfg.work, fmt.Sprintf("monty-%s-%d.log", scenario, i))}
		if err := m.start(ctx); err != nil {
			for _, o := range out {
				o.close()
			}
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// driveMCP runs sessions one after another in one slot: one client per
// session appending through both processes in turn.
func (r *scenarioRun) driveMCP(ctx context.Context, slot int) {
	cfg := r.e.cfg
	for n := 0; !r.stop.Load(); n++ {
		h := &SessionHistory{ID: fmt.Sprintf("m-%d-%d-%s", slot, n, randomHex(3))}
		r.mu.Lock()
		r.histories = append(r.histories, h)
		r.mu.Unlock()
		for seq := 0; seq < cfg.perSession && !r.stop.Load(); seq++ {
			v := fmt.Sprintf("%s.c0.%d", h.ID, seq)
			op := Op{Session: h.ID, Kind: Append, Value: v, Key: "fk-" + v, ExpectState: seq > 0}
			code := fmt.Sprintf("log.append(%q)\n'|'.join(log)", v)
			if seq == 0 {
				code = fmt.Sprintf("log = [%q]\n'|'.join(log)", v)
			}
			r.mcpCall(ctx, &op, code, (slot+seq)%2)
			h.Ops = append(h.Ops, op)
		}
	}
}

// mcpFinalReads reads each session's list through the second process.
func (r *scenarioRun) mcpFinalReads(ctx context.Context) {
	for i, h := range r.histories {
		op := Op{Session: h.ID, Kind: Read, ExpectState: true}
		r.mcpCall(ctx, &op, "'|'.join(log)", i%2)
		h.Ops = append(h.Ops, op)
	}
}

// mcpCall performs one logical call: tried on process first, then
// alternating, until it is answered or its time is up.
func (r *scenarioRun) mcpCall(ctx context.Context, op *Op, code string, first int) {
	op.Call = time.Now()
	deadline := op.Call.Add(r.client.opTimeout)
	for n := 0; ; n++ {
		inst := (first + n) % len(r.mcp)
		a := Attempt{Instance: inst, Start: time.Now()}
		list, pyErr, class, detail := r.mcpAttempt(ctx, inst, op, code)
		a.End, a.Class, a.Detail = time.Now(), class, detail
		op.Attempts = append(op.Attempts, a)
		switch {
		case class == "200" && pyErr == "":
			op.Outcome, op.List, op.Return = Acked, list, a.End
			return
		case class == "200":
			op.Outcome, op.PyError, op.Return = Refused, pyErr, a.End
			return
		case time.Now().After(deadline):
			op.Outcome, op.Return = Unknown, a.End
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mcpAttempt makes one execute_python call.
func (r *scenarioRun) mcpAttempt(ctx context.Context, inst int, op *Op, code string) (list []string, pyErr, class, detail string) {
	cs := r.mcp[inst].session()
	args := map[string]any{"code": code, "session_id": op.Session}
	if op.Key != "" {
		args["idempotency_key"] = op.Key
	}
	cctx, cancel := context.WithTimeout(ctx, r.client.http.Timeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "execute_python", Arguments: args})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, "", "timeout", err.Error()
	case err != nil:
		return nil, "", "mcp transport", err.Error()
	}
	text := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text += t.Text
		}
	}
	var out struct {
		Result    string `json:"result"`
		ErrorType string `json:"error_type"`
	}
	if raw, err := json.Marshal(res.StructuredContent); err == nil {
		_ = json.Unmarshal(raw, &out)
	}
	switch {
	case res.IsError && out.ErrorType != "":
		return nil, out.ErrorType, "200 " + out.ErrorType, text
	case res.IsError && strings.Contains(text, "busy"):
		return nil, "", "mcp busy", text
	case res.IsError && (strings.Contains(text, "unavailable") || strings.Contains(text, "did not answer") || strings.Contains(text, "claim")):
		return nil, "", "mcp store_unavailable", text
	case res.IsError:
		return nil, "", "mcp error", text
	}
	joined := strings.Trim(out.Result, "'")
	if joined != "" {
		list = strings.Split(joined, "|")
	}
	return list, "", "200", ""
}
