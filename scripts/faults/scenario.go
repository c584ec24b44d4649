package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// fault is one injected failure: inject starts it, heal ends it.
type fault struct {
	name string
	// what says what the fault does, for the report.
	what   string
	inject func(r *scenarioRun) error
	heal   func(r *scenarioRun) error
	// destroysData marks a fault after which lost effects are expected
	// (reported, not violations) for the sessions that lived through it.
	destroysData bool
}

// scenario is a store configuration and the faults run one after another
// on it while the load runs.
type scenario struct {
	name string
	// setup returns the store spec and extra `monty serve` flags; a
	// non-nil skip error skips the scenario with its message.
	setup  func(e *env) (spec string, flags []string, err error)
	faults []fault
	// teardown undoes setup (after the instances stopped).
	teardown func(e *env)
	// approvals runs approvals (driveApprovals) instead of list appends.
	approvals bool
	// montyV1 appends through monty.v1 sessions (driveMontyV1) instead of
	// /exec.
	montyV1 bool
	// mcp appends through execute_python on two `monty mcp` processes
	// (driveMCP) instead of two `monty serve`.
	mcp bool
}

// errSkip marks a scenario that cannot run here.
var errSkip = errors.New("skipped")

// faultRecord is when a fault's phases were, and what injecting it did.
type faultRecord struct {
	scenario, name, what     string
	start, inject, heal, end time.Time
	err                      error
	destroysData             bool
}

// scenarioRun is one scenario being run.
type scenarioRun struct {
	e         *env
	sc        scenario
	instances []*instance
	client    *client

	mu        sync.Mutex
	histories []*SessionHistory
	faults    []faultRecord
	stop      atomic.Bool

	// approvals, charge and resuming serve an approvals scenario: the
	// approvals made, the MCP server that counts the calls, and the
	// instance each session's resume in progress was sent to.
	approvals []*approvalRun
	charge    *chargeServer
	resuming  map[string]int

	// v1 counts the function calls of a monty.v1 scenario.
	v1 v1Figures
	// mcp are the `monty mcp` processes of an MCP scenario.
	mcp []*mcpServer
}

func (r *scenarioRun) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "faults: %s %s: %s\n", time.Now().Format("15:04:05.000"), r.sc.name, fmt.Sprintf(format, args...))
}

// runScenario starts the instances, the load and the faults in turn, then
// reads every session's final list.
func runScenario(e *env, sc scenario) (*scenarioRun, error) {
	spec, flags, err := sc.setup(e)
	if err != nil {
		return nil, err
	}
	if sc.teardown != nil {
		defer sc.teardown(e)
	}
	r := &scenarioRun{e: e, sc: sc, charge: e.charge, resuming: map[string]int{}}
	r.logf("store %s", strings.ReplaceAll(spec, e.s3Secret, "***"))
	ctx := context.Background()
	cfg := e.cfg
	if sc.mcp {
		if r.mcp, err = e.startMCPServers(ctx, sc.name, spec); err != nil {
			return nil, err
		}
		defer func() {
			for _, m := range r.mcp {
				m.close()
			}
		}()
		r.client = newClient([]string{r.mcp[0].name, r.mcp[1].name}, apiKey, cfg.limitMS, cfg.slack, cfg.opTimeout)
	} else {
		if r.instances, err = e.startInstances(sc.name, spec, flags); err != nil {
			return nil, err
		}
		defer func() {
			for _, inst := range r.instances {
				inst.close()
			}
		}()
		r.client = newClient([]string{r.instances[0].front.url(), r.instances[1].front.url()}, apiKey, cfg.limitMS, cfg.slack, cfg.opTimeout)
	}
	r.client.noKey = cfg.noKey

	var wg sync.WaitGroup
	for slot := range cfg.slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch {
			case sc.approvals:
				r.driveApprovals(ctx, slot)
			case sc.montyV1:
				r.driveMontyV1(ctx, slot)
			case sc.mcp:
				r.driveMCP(ctx, slot)
			default:
				r.drive(ctx, slot)
			}
		}()
	}
	for _, f := range sc.faults {
		rec := faultRecord{scenario: sc.name, name: f.name, what: f.what, destroysData: f.destroysData, start: time.Now()}
		time.Sleep(cfg.before)
		rec.inject = time.Now()
		r.logf("inject %s", f.name)
		if err := f.inject(r); err != nil {
			rec.err = fmt.Errorf("inject: %w", err)
		}
		time.Sleep(cfg.during)
		rec.heal = time.Now()
		r.logf("heal %s", f.name)
		if err := f.heal(r); err != nil && rec.err == nil {
			rec.err = fmt.Errorf("heal: %w", err)
		}
		time.Sleep(cfg.after)
		rec.end = time.Now()
		r.mu.Lock()
		r.faults = append(r.faults, rec)
		r.mu.Unlock()
		if rec.err != nil {
			r.logf("%s: %v", f.name, rec.err)
		}
	}
	r.stop.Store(true)
	wg.Wait()
	switch {
	case sc.mcp:
		r.logf("load stopped; reading %d sessions' final lists", len(r.histories))
		r.mcpFinalReads(ctx)
	case !sc.approvals:
		r.logf("load stopped; reading %d sessions' final lists", len(r.histories))
		r.finalReads(ctx)
	}
	return r, nil
}

// drive runs sessions one after another in one slot: the session's first
// append (which creates the list) alone, then cfg.clients clients
// appending concurrently, each alternating instances.
func (r *scenarioRun) drive(ctx context.Context, slot int) {
	cfg := r.e.cfg
	for n := 0; !r.stop.Load(); n++ {
		h := &SessionHistory{ID: fmt.Sprintf("f-%s-%d-%d-%s", r.sc.name, slot, n, randomHex(3))}
		r.mu.Lock()
		r.histories = append(r.histories, h)
		r.mu.Unlock()
		var hmu sync.Mutex
		do := func(clientID, seq int, create bool) {
			v := fmt.Sprintf("%s.c%d.%d", h.ID, clientID, seq)
			op := Op{Session: h.ID, Client: clientID, Kind: Append, Value: v, Key: "fk-" + v, ExpectState: !create}
			r.client.run(ctx, &op, appendCode(v, create), (slot+clientID+seq)%2)
			hmu.Lock()
			h.Ops = append(h.Ops, op)
			hmu.Unlock()
		}
		do(0, 0, true)
		var wg sync.WaitGroup
		for c := range cfg.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := 1; seq <= cfg.perSession/cfg.clients && !r.stop.Load(); seq++ {
					do(c, seq, false)
				}
			}()
		}
		wg.Wait()
	}
}

// finalReads reads each session's list once the faults are over.
func (r *scenarioRun) finalReads(ctx context.Context) {
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, h := range r.histories {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			op := Op{Session: h.ID, Client: 0, Kind: Read, ExpectState: true}
			r.client.run(ctx, &op, "log", i%2)
			h.Ops = append(h.Ops, op)
			for _, f := range r.faults {
				if f.destroysData && h.Ops[0].Call.Before(f.heal) {
					h.LossExpected = true
				}
			}
		}()
	}
	wg.Wait()
}

// --- faults on a toxiproxy link

func toxic(p func(e *env) *toxiproxy.Proxy, name, kind string, toxicity float32, attrs toxiproxy.Attributes, streams ...string) (func(*scenarioRun) error, func(*scenarioRun) error) {
	inject := func(r *scenarioRun) error {
		for _, s := range streams {
			if _, err := p(r.e).AddToxic(name+"-"+s, kind, s, toxicity, attrs); err != nil {
				return err
			}
		}
		return nil
	}
	heal := func(r *scenarioRun) error {
		for _, s := range streams {
			if err := p(r.e).RemoveToxic(name + "-" + s); err != nil {
				return err
			}
		}
		return nil
	}
	return inject, heal
}

func redisLink(e *env) *toxiproxy.Proxy { return e.redisProxy }
func s3Link(e *env) *toxiproxy.Proxy    { return e.s3Proxy }

func toxicFault(name, what string, link func(*env) *toxiproxy.Proxy, kind string, toxicity float32, attrs toxiproxy.Attributes, streams ...string) fault {
	inject, heal := toxic(link, name, kind, toxicity, attrs, streams...)
	return fault{name: name, what: what, inject: inject, heal: heal}
}

func partitionFault(name, what string, link func(*env) *toxiproxy.Proxy) fault {
	return fault{name: name, what: what,
		inject: func(r *scenarioRun) error { return link(r.e).Disable() },
		heal:   func(r *scenarioRun) error { return link(r.e).Enable() },
	}
}

// killFault SIGKILLs instance #0 and starts it again at the heal.
func killFault(name, what string) fault {
	return fault{name: name, what: what,
		inject: func(r *scenarioRun) error { r.e.killInstance(r.instances[0]); return nil },
		heal:   func(r *scenarioRun) error { return r.e.restartInstance(r.instances[0]) },
	}
}

// redisRestartFault SIGKILLs Redis and starts it again, without
// persistence: what it held is gone.
func redisRestartFault(name, what string) fault {
	return fault{name: name, what: what, destroysData: true,
		inject: func(r *scenarioRun) error { r.e.redis.kill(); return nil },
		heal: func(r *scenarioRun) error {
			return startAndWait(r.e.redis, tcpReady(fmt.Sprintf("127.0.0.1:%d", r.e.redisPort)))
		},
	}
}

// scenarios is the suite: a Redis store, a Redis store that loses its
// data, a tiered Redis,S3 store, and a directory store on a small tmpfs.
func scenarios() []scenario {
	redisFlags := []string{}
	return []scenario{
		{
			name: "redis",
			setup: func(e *env) (string, []string, error) {
				return e.redisSpec(0), redisFlags, nil
			},
			faults: []fault{
				{
					name: "answers-lost", what: "half of instance #0's answers lost on their way back (the request done, the connection closed)",
					inject: func(r *scenarioRun) error {
						r.e.markDown(r.instances[0].front.url(), true)
						r.instances[0].front.dropping.Store(50)
						return nil
					},
					heal: func(r *scenarioRun) error {
						r.instances[0].front.dropping.Store(0)
						r.e.markDown(r.instances[0].front.url(), false)
						return nil
					},
				},
				toxicFault("redis-latency", "200 ms ± 50 ms added to every Redis reply", redisLink, "latency", 1, toxiproxy.Attributes{"latency": 200, "jitter": 50}, "downstream"),
				toxicFault("redis-timeout", "Redis link stops passing data (toxiproxy timeout toxic, no close)", redisLink, "timeout", 1, toxiproxy.Attributes{"timeout": 0}, "upstream"),
				toxicFault("redis-reset", "half of the new Redis connections reset by peer", redisLink, "reset_peer", 0.5, toxiproxy.Attributes{"timeout": 0}, "downstream"),
				toxicFault("redis-bandwidth", "Redis link limited to 16 KB/s each way", redisLink, "bandwidth", 1, toxiproxy.Attributes{"rate": 16}, "upstream", "downstream"),
				partitionFault("redis-partition", "Redis unreachable: the link refuses and drops connections, then heals", redisLink),
				killFault("kill-instance", "SIGKILL of instance #0 mid-run; restarted when the fault heals"),
			},
		},
		{
			name: "redisloss",
			setup: func(e *env) (string, []string, error) {
				return e.redisSpec(1), redisFlags, nil
			},
			faults: []fault{redisRestartFault("redis-restart-empty", "Redis SIGKILLed and started again with no persistence: every session's data is gone")},
		},
		{
			name: "tiered",
			setup: func(e *env) (string, []string, error) {
				ttl := max(3*e.cfg.during, 20*time.Second)
				return e.redisSpec(2) + "," + e.s3Spec(), []string{"--state-archive-after", "1s", "--state-archive-interval", "1s", "--state-ttl", fmt.Sprintf("%ds", int(ttl.Seconds()))}, nil
			},
			faults: []fault{
				partitionFault("s3-partition", "S3 unreachable under HOT,COLD: the link refuses and drops connections, then heals", s3Link),
				{
					name: "s3-stop", what: "the S3 server stopped (SIGTERM) under HOT,COLD, then started again",
					inject: func(r *scenarioRun) error { r.e.s3.stop(); return nil },
					heal: func(r *scenarioRun) error {
						return startAndWait(r.e.s3, tcpReady(fmt.Sprintf("127.0.0.1:%d", r.e.s3Port)))
					},
				},
			},
		},
		{
			name: "dirfull",
			setup: func(e *env) (string, []string, error) {
				mnt := filepath.Join(e.cfg.work, "dirstore")
				if err := mountTmpfs(mnt, e.cfg.tmpfsSize); err != nil {
					return "", nil, fmt.Errorf("%w: mount -t tmpfs -o size=%s is not permitted here (%v)", errSkip, e.cfg.tmpfsSize, err)
				}
				return filepath.Join(mnt, "sessions"), nil, nil
			},
			teardown: func(e *env) { unmount(filepath.Join(e.cfg.work, "dirstore")) },
			faults: []fault{{
				name: "disk-full", what: "the directory store's tmpfs (16 MiB short, 64 MiB long) filled up, then the filler removed",
				inject: func(r *scenarioRun) error { return fillDisk(filepath.Join(r.e.cfg.work, "dirstore", "filler")) },
				heal:   func(r *scenarioRun) error { return os.Remove(filepath.Join(r.e.cfg.work, "dirstore", "filler")) },
			}},
		},
		{
			name:    "montyv1",
			montyV1: true,
			setup: func(e *env) (string, []string, error) {
				return e.redisSpec(4), redisFlags, nil
			},
			faults: []fault{
				killFault("kill-holder", "SIGKILL of instance #0, holding monty.v1 sessions mid-feed; restarted when the fault heals"),
				partitionFault("v1-redis-partition", "Redis unreachable under monty.v1 sessions (turns not stored are not answered; claims lapse), then heals", redisLink),
				toxicFault("v1-redis-latency", "200 ms ± 50 ms added to every Redis reply under monty.v1 sessions", redisLink, "latency", 1, toxiproxy.Attributes{"latency": 200, "jitter": 50}, "downstream"),
				redisRestartFault("v1-redis-restart-empty", "Redis SIGKILLed and started again with no persistence under monty.v1 sessions: their data is gone"),
			},
		},
		{
			name: "mcp",
			mcp:  true,
			setup: func(e *env) (string, []string, error) {
				return e.redisSpec(5), nil, nil
			},
			faults: []fault{
				{
					name: "kill-mcp", what: "SIGKILL of `monty mcp` #0 mid-call (its claims held in the store); started again when the fault heals",
					inject: func(r *scenarioRun) error {
						r.e.markDown(r.mcp[0].name, true)
						r.mcp[0].kill()
						return nil
					},
					heal: func(r *scenarioRun) error {
						err := r.mcp[0].start(context.Background())
						r.e.markDown(r.mcp[0].name, false)
						return err
					},
				},
				partitionFault("mcp-redis-partition", "Redis unreachable under the MCP servers, then heals", redisLink),
			},
		},
		{
			name:      "approvals",
			approvals: true,
			setup: func(e *env) (string, []string, error) {
				if e.charge == nil {
					c, err := startChargeServer(300 * time.Millisecond)
					if err != nil {
						return "", nil, err
					}
					e.charge = c
				}
				return e.redisSpec(3), []string{"--connect", "pay=" + e.charge.url, "--claim-lease", "3s"}, nil
			},
			faults: []fault{{
				name: "kill-during-approved-call", what: "SIGKILL of instance #0 while it makes an approved MCP call (its claim stored); restarted when the fault heals",
				inject: func(r *scenarioRun) error { return r.killDuringCall() },
				heal:   func(r *scenarioRun) error { return r.e.restartInstance(r.instances[0]) },
			}},
		},
	}
}

// fillDisk writes zeros to path until the file system is full.
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			// A full disk is what we wanted; anything else is not.
			if errors.Is(err, io.ErrShortWrite) || isENOSPC(err) {
				return nil
			}
			return err
		}
	}
}
