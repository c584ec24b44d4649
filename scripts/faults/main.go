// Command faults runs `monty serve` under faults and checks what its
// clients saw. It starts Redis and an S3 server (versitygw) behind
// toxiproxy, and per scenario two `monty serve` instances sharing a store;
// clients append unique values to per-session lists through both
// instances, retrying with the same Idempotency-Key (or, in the montyv1
// scenario, feeding monty.v1 sessions and loading them on the other
// instance when a connection breaks), while faults are
// injected one after another (each with a before, a during and an after
// phase). Then it reads every session's list and checks the histories:
// every acknowledged append present exactly once, no retry applied twice,
// each session's history linearizable (Porcupine), every error a clear
// retriable status, service back within 5 s of each heal, no process
// crashed that was not killed. It prints the figures as a Markdown table
// and exits 1 on any violation.
//
// scripts/faults.sh builds the binaries and runs it; see docs/reliability.md.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// config is one run's settings.
type config struct {
	profile                       string
	monty, redisServer, versitygw string
	toxiproxy                     string
	work                          string
	figuresOut                    string
	only                          string
	noKey                         bool
	slots, clients, perSession    int
	limitMS                       int
	slack, opTimeout              time.Duration
	before, during, after         time.Duration
	// tmpfsSize is the size of the directory store's tmpfs: room for the
	// sessions' state (idempotency answers included), filled by disk-full.
	tmpfsSize string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.profile, "profile", "short", "short (CI: a few minutes) or long (release runs, figures)")
	flag.StringVar(&cfg.monty, "monty", "monty", "the monty binary")
	flag.StringVar(&cfg.redisServer, "redis-server", "redis-server", "the redis-server binary")
	flag.StringVar(&cfg.versitygw, "versitygw", "versitygw", "the versitygw binary")
	flag.StringVar(&cfg.toxiproxy, "toxiproxy", "toxiproxy-server", "the toxiproxy server binary")
	flag.StringVar(&cfg.work, "work", "", "a directory for logs and data (required)")
	flag.StringVar(&cfg.figuresOut, "figures", "", "also write the figures as Markdown to this file")
	flag.StringVar(&cfg.only, "only", "", "run only these scenarios (comma-separated: redis, redisloss, tiered, dirfull, montyv1, mcp, approvals)")
	flag.BoolVar(&cfg.noKey, "no-idempotency-key", false, "retry without Idempotency-Key (the checker should then find duplicates)")
	flag.Parse()
	if cfg.work == "" {
		fmt.Fprintln(os.Stderr, "faults: -work is required")
		os.Exit(2)
	}
	cfg.limitMS, cfg.slack, cfg.opTimeout = 2000, 8*time.Second, 30*time.Second
	switch cfg.profile {
	case "short":
		cfg.slots, cfg.clients, cfg.perSession = 3, 2, 30
		cfg.before, cfg.during, cfg.after = 3*time.Second, 4*time.Second, 6*time.Second
		cfg.tmpfsSize = "16m"
	case "long":
		cfg.slots, cfg.clients, cfg.perSession = 4, 2, 100
		cfg.before, cfg.during, cfg.after = 10*time.Second, 15*time.Second, 15*time.Second
		cfg.tmpfsSize = "64m"
	default:
		fmt.Fprintf(os.Stderr, "faults: unknown profile %q (short or long)\n", cfg.profile)
		os.Exit(2)
	}
	os.Exit(run(cfg))
}

func run(cfg config) int {
	start := time.Now()
	e, err := startServices(cfg)
	if e != nil {
		defer e.close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	stopRSS := make(chan struct{})
	go e.sampleRSS(stopRSS)

	var (
		violations, expected []Violation
		findings             []string
		figs                 []faultFigures
		totals               CheckResult
		replays              int
		rss                  []string
		whats                []string
		approvalSummary      string
		v1Summary            string
	)
	for _, sc := range scenarios() {
		if cfg.only != "" && !slices.Contains(strings.Split(cfg.only, ","), sc.name) {
			continue
		}
		r, err := runScenario(e, sc)
		if err != nil {
			if errors.Is(err, errSkip) {
				findings = append(findings, fmt.Sprintf("scenario %s skipped: %v", sc.name, err))
				fmt.Fprintf(os.Stderr, "faults: scenario %s skipped: %v\n", sc.name, err)
				continue
			}
			fmt.Fprintf(os.Stderr, "faults: scenario %s: %v\n", sc.name, err)
			return 1
		}
		hs := make([]SessionHistory, len(r.histories))
		for i, h := range r.histories {
			hs[i] = *h
		}
		if err := writeJSON(filepath.Join(cfg.work, "histories-"+sc.name+".json"), hs); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
		}
		res := Check(hs)
		totals.Sessions += res.Sessions
		totals.Acked += res.Acked
		totals.Unknown += res.Unknown
		totals.UnknownApplied += res.UnknownApplied
		violations = append(violations, res.Violations...)
		expected = append(expected, res.Expected...)
		if sc.approvals {
			av, summary := r.checkApprovals()
			violations = append(violations, av...)
			approvalSummary = summary
		}
		if sc.montyV1 {
			violations = append(violations, r.v1.reaskedAfterAck...)
			v1Summary = fmt.Sprintf("%d sessions, %d asks of the client's function, %d of them asked again after a crash or an outage left the turn unstored, %d asked again after its feed's result was acknowledged",
				res.Sessions, r.v1.asks, r.v1.reasks, len(r.v1.reaskedAfterAck))
		}
		pv, pf, rp := r.errorPolicy()
		violations = append(violations, pv...)
		for _, f := range pf {
			findings = append(findings, sc.name+": "+f)
		}
		replays += rp
		fs := r.figures()
		figs = append(figs, fs...)
		violations = append(violations, recoveryPolicy(fs)...)
		for _, inst := range r.instances {
			rss = append(rss, fmt.Sprintf("| %s | %.1f |", inst.p.name, float64(inst.p.peakRSS)/1024))
		}
		for _, f := range sc.faults {
			whats = append(whats, fmt.Sprintf("- `%s` (%s): %s", f.name, sc.name, f.what))
		}
	}
	close(stopRSS)
	for _, p := range e.procs {
		for _, c := range p.crashed() {
			violations = append(violations, Violation{"crash", p.name, c})
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Fault suite, profile %s, %s, %d sessions, %d acknowledged appends, %d with no answer (%d of them applied), %d retries answered as replays, took %s.\n\n",
		cfg.profile, time.Now().UTC().Format("2006-01-02"), totals.Sessions, totals.Acked, totals.Unknown, totals.UnknownApplied, replays, time.Since(start).Round(time.Second))
	b.WriteString(figuresTable(figs))
	if approvalSummary != "" {
		fmt.Fprintf(&b, "\nApprovals: %s.\n", approvalSummary)
	}
	if v1Summary != "" {
		fmt.Fprintf(&b, "\nmonty.v1: %s.\n", v1Summary)
	}
	b.WriteString("\n| process | peak RSS (VmHWM) MiB |\n| --- | --- |\n")
	b.WriteString(strings.Join(rss, "\n") + "\n")
	fmt.Fprintf(&b, "\nFaults:\n\n%s\n", strings.Join(whats, "\n"))
	fmt.Print(b.String())
	if cfg.figuresOut != "" {
		if err := os.WriteFile(cfg.figuresOut, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
		}
	}
	if len(expected) > 0 {
		fmt.Printf("\nEffects lost to faults that destroy data (expected, not violations): %d\n", len(expected))
		printSome(expected)
	}
	if len(findings) > 0 {
		fmt.Printf("\nFindings (%d):\n", len(findings))
		for _, f := range findings[:min(len(findings), 30)] {
			fmt.Println("  -", f)
		}
		if len(findings) > 30 {
			fmt.Printf("  … %d more\n", len(findings)-30)
		}
	}
	fmt.Printf("\nLogs of every process: %s\n", filepath.Clean(cfg.work))
	if len(violations) > 0 {
		fmt.Printf("\nFAILED: %d violations:\n", len(violations))
		printSome(violations)
		return 1
	}
	fmt.Println("\nOK: no acknowledged effect lost, none applied twice, histories linearizable, errors clear, recovery within 5 s, no crash")
	return 0
}

// printSome prints the first violations of each kind.
func printSome(vs []Violation) {
	perKind := map[string]int{}
	for _, v := range vs {
		perKind[v.Kind]++
		if perKind[v.Kind] <= 5 {
			fmt.Println("  -", v)
		}
	}
	for k, n := range perKind {
		if n > 5 {
			fmt.Printf("  (%s: %d in all)\n", k, n)
		}
	}
}

// writeJSON writes v to path as indented JSON (the histories, for a closer
// look after a failure).
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
