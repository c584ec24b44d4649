//go:build !monty_lean

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session/protocol/server"
)

// wsFlags are monty serve's flags for the monty.v1 WebSocket server.
type wsFlags struct {
	maxConns, maxConnsPerKey int
	idleTimeout, turnTimeout time.Duration
	frameTimeout             time.Duration
	maxFrame                 string
	profilesFile             string
	parkOnly                 bool
}

func addWSFlags(fs *flag.FlagSet) *wsFlags {
	w := &wsFlags{}
	fs.IntVar(&w.maxConns, "ws-max-conns", server.DefaultMaxConns, "monty.v1 WebSocket connections open at once; more are refused with 503")
	fs.IntVar(&w.maxConnsPerKey, "ws-max-conns-per-key", server.DefaultMaxConnsPerKey, "monty.v1 WebSocket connections of one API key open at once")
	fs.DurationVar(&w.idleTimeout, "ws-idle-timeout", server.DefaultIdleTimeout, "close a monty.v1 connection whose client sends nothing for this long (its session is parked in the store)")
	fs.DurationVar(&w.turnTimeout, "ws-turn-timeout", server.DefaultTurnTimeout, "close a monty.v1 connection whose request runs longer than this")
	fs.StringVar(&w.maxFrame, "ws-max-frame", "16MiB", "largest monty.v1 request frame: a larger one is refused (close 1009) as soon as its header arrives")
	fs.DurationVar(&w.frameTimeout, "ws-frame-timeout", server.DefaultFrameTimeout, "close a monty.v1 connection whose request frame has not fully arrived this long after its first byte")
	fs.StringVar(&w.profilesFile, "profiles", "", "monty.v1 session profiles, a JSON `FILE`: {\"NAME\": {\"max_memory\": \"64MiB\", \"max_duration\": \"5s\", \"max_recursion\": 200, \"mounts\": [\"HOST:GUEST:ro\"], \"connect\": [\"NAME=COMMAND\"], \"park_only\": false}} (docs/protocol.md)")
	fs.BoolVar(&w.parkOnly, "ws-park-only", false, "store monty.v1 sessions only when their connection ends, idles out or the server drains, not after every turn: a write less per turn, but a crash of this instance loses what its sessions did since they were last stored")
	return w
}

// profileSpec is one profile of the --profiles file.
type profileSpec struct {
	MaxMemory    string   `json:"max_memory"`
	MaxDuration  string   `json:"max_duration"`
	MaxRecursion int      `json:"max_recursion"`
	Mounts       []string `json:"mounts"`
	Connect      []string `json:"connect"`
	ParkOnly     bool     `json:"park_only"`
}

// readProfiles parses the --profiles file (nil without one).
func readProfiles(file string) (map[string]profileSpec, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--profiles: %w", err)
	}
	var specs map[string]profileSpec
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("--profiles %s: %w (want {\"NAME\": {\"max_memory\": ..., \"max_duration\": ..., \"max_recursion\": ..., \"mounts\": [...], \"connect\": [...], \"park_only\": ...}})", file, err)
	}
	for name := range specs {
		if name == "" {
			return nil, fmt.Errorf("--profiles %s: a profile has an empty name (the server's own flags make the default profile)", file)
		}
	}
	return specs, nil
}

// wsProfiles builds the server's profiles: the default one from serve's
// own limits, --mount and --connect, and the --profiles file's. The MCP
// servers a profile connects are closed by the returned function.
func wsProfiles(ctx context.Context, specs map[string]profileSpec, def server.Profile, timeout time.Duration, log *slog.Logger) (map[string]server.Profile, func(), error) {
	profiles := map[string]server.Profile{"": def}
	var opened []*mcpServers
	closeAll := func() {
		for _, s := range opened {
			s.Close()
		}
	}
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		spec := specs[name]
		p, servers, err := buildProfile(ctx, name, spec, timeout, log)
		if servers != nil {
			opened = append(opened, servers)
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		profiles[name] = p
	}
	return profiles, closeAll, nil
}

func buildProfile(ctx context.Context, name string, spec profileSpec, timeout time.Duration, log *slog.Logger) (server.Profile, *mcpServers, error) {
	var p server.Profile
	fail := func(err error) (server.Profile, *mcpServers, error) {
		return p, nil, usageError{fmt.Errorf("--profiles: profile %s: %w", name, err)}
	}
	if spec.MaxMemory != "" {
		n, err := parseBytes(spec.MaxMemory)
		if err != nil || n <= 0 {
			return fail(fmt.Errorf("max_memory %q: want a size such as 64MiB", spec.MaxMemory))
		}
		p.Limits.MaxMemory = n
	}
	if spec.MaxDuration != "" {
		d, err := time.ParseDuration(spec.MaxDuration)
		if err != nil || d <= 0 {
			return fail(fmt.Errorf("max_duration %q: want a duration such as 5s", spec.MaxDuration))
		}
		p.Limits.MaxDuration = d
	}
	if spec.MaxRecursion < 0 {
		return fail(errors.New("max_recursion must not be negative"))
	}
	p.Limits.MaxRecursion = spec.MaxRecursion
	p.ParkOnly = spec.ParkOnly
	for _, m := range spec.Mounts {
		ms, err := vfs.ParseMount(m)
		if err != nil {
			return fail(err)
		}
		p.Mounts = append(p.Mounts, ms)
	}
	if len(p.Mounts) > 0 {
		t, err := vfs.OpenMounts(p.Mounts...)
		if err != nil {
			return fail(err)
		}
		_ = t.Close()
	}
	if len(spec.Connect) == 0 {
		return p, nil, nil
	}
	cf := &connectFlags{connects: spec.Connect, timeout: timeout}
	conns, err := cf.servers()
	if err != nil {
		return fail(err)
	}
	servers, err := cf.connect(ctx, conns, log.With("profile", name))
	if err != nil {
		return p, nil, fmt.Errorf("--profiles: profile %s: %w", name, err)
	}
	p.Host, p.Tools = servers.host(), servers.reg
	return p, servers, nil
}

// wsOptions are the server options the flags give (without store, engine,
// keys and profiles).
func (w *wsFlags) options() (server.Options, error) {
	var o server.Options
	if w.maxConns <= 0 || w.maxConnsPerKey <= 0 {
		return o, usageError{errors.New("--ws-max-conns and --ws-max-conns-per-key must be positive")}
	}
	if w.idleTimeout <= 0 || w.turnTimeout <= 0 || w.frameTimeout <= 0 {
		return o, usageError{errors.New("--ws-idle-timeout, --ws-turn-timeout and --ws-frame-timeout must be positive")}
	}
	n, err := parseBytes(w.maxFrame)
	if err != nil || n < 1024 || n > 1<<30 {
		return o, usageError{fmt.Errorf("--ws-max-frame %q: want a size between 1KiB and 1GiB", w.maxFrame)}
	}
	o.MaxConns, o.MaxConnsPerKey = w.maxConns, w.maxConnsPerKey
	o.IdleTimeout, o.TurnTimeout, o.FrameTimeout, o.MaxFrame = w.idleTimeout, w.turnTimeout, w.frameTimeout, n
	o.ParkOnly = w.parkOnly
	return o, nil
}
