package main

import (
	"fmt"
	"strings"
	"time"
)

// recoveryTarget is how soon after a fault heals the service must answer
// again, and be back to half its throughput.
const recoveryTarget = 5 * time.Second

// errorPolicy checks every answer a client saw: a clear retriable status
// (503 or 429 with Retry-After, 409 busy, conflict or key in flight), 412
// precondition_failed for a session the store lost (If-Match: *), a
// Python-side error, or a connection error from an instance that was
// killed; never a 500, an error without a code, or no answer within the
// request's time limit plus slack. It also collects findings: sessions
// that silently came back empty, state warnings, Python errors.
func (r *scenarioRun) errorPolicy() (vs []Violation, findings []string, replays int) {
	emptied := map[string]bool{}
	lost := map[string]bool{} // sessions refused with 412: their state is gone
	warned := map[string]int{}
	pyErrors := map[string]int{}
	var emptiedExamples []string
	noRetryAfter := map[string]int{}
	sessions := map[string]*SessionHistory{}
	for _, h := range r.histories {
		sessions[h.ID] = h
	}
	for _, op := range r.allOps() {
		h := sessions[op.Session]
		{
			if op.Warning != "" {
				warned[op.Warning]++
			}
			for _, a := range op.Attempts {
				if a.Replayed {
					replays++
				}
				status, code, _ := strings.Cut(a.Class, " ")
				bad := ""
				switch status {
				case "200":
					if code == "" {
						break
					}
					firstAppend := op.Kind == Append && strings.HasSuffix(op.Value, ".c0.0")
					if code == "NameError" && !firstAppend && h != nil && ackedBefore(h, a.Start) {
						if !emptied[h.ID] {
							emptied[h.ID] = true
							emptiedExamples = append(emptiedExamples, fmt.Sprintf("%s at %s on instance #%d", h.ID, a.End.Format("15:04:05.000"), a.Instance))
						}
					} else {
						pyErrors[code]++
					}
				case "503", "429":
					if !a.RetryAfter {
						bad = "without Retry-After"
					}
				case "412":
					// If-Match: * on a session the store no longer has:
					// the client is told its state is gone.
					if code != "precondition_failed" {
						bad = "not a clear refusal"
					} else {
						lost[op.Session] = true
					}
				case "409":
					switch code {
					case "session_busy", "conflict":
					case "run_not_paused":
						// Clear and retriable while another resume's claim
						// holds ("being resumed elsewhere").
						if !strings.Contains(a.Detail, "elsewhere") {
							bad = "not a retriable conflict"
						} else if !a.RetryAfter {
							noRetryAfter[code]++
						}
					case "idempotency_key_in_flight":
						if !a.RetryAfter {
							bad = "without Retry-After"
						}
					default:
						bad = "not a retriable conflict"
					}
				case "ws":
					// monty.v1: the server's clear refusals, and broken
					// connections only from an instance that was killed.
					switch code {
					case "busy", "not_stored", "store_unavailable", "claim_lost", "shutdown", "not_found":
					case "dial", "disconnect":
						if !r.e.wasDown(r.client.urls[a.Instance], a.Start, a.End) {
							bad = "from an instance that was not killed"
						}
					default:
						bad = "not a clear retriable refusal"
					}
				case "mcp":
					// MCP: the tool's clear refusals, and broken sessions
					// only from a process that was killed.
					switch code {
					case "busy", "store_unavailable":
					case "transport":
						if !r.e.wasDown(r.client.urls[a.Instance], a.Start, a.End) {
							bad = "from a process that was not killed"
						}
					default:
						bad = "not a clear retriable refusal"
					}
				case "timeout":
					bad = fmt.Sprintf("no answer within the request's limit plus slack (%s)", r.client.http.Timeout)
				case "connection", "transport":
					if !r.e.wasDown(r.client.urls[a.Instance], a.Start, a.End) {
						bad = "from an instance that was not killed"
					}
				default:
					bad = "not a clear retriable status"
				}
				if bad != "" {
					vs = append(vs, Violation{"unclear_error", op.Session, fmt.Sprintf("instance #%d answered %q %s at %s: %s", a.Instance, a.Class, bad, a.End.Format("15:04:05.000"), a.Detail)})
				}
			}
		}
	}
	if len(emptied) > 0 {
		findings = append(findings, fmt.Sprintf("silent empty session: %d sessions with acknowledged appends answered 200 with NameError (their list gone) with no state_warning and no error status, e.g. %s", len(emptied), strings.Join(emptiedExamples[:min(3, len(emptiedExamples))], "; ")))
	}
	if len(lost) > 0 {
		findings = append(findings, fmt.Sprintf("lost sessions told: %d sessions whose state the store lost were refused 412 precondition_failed (If-Match: *), not continued as empty ones", len(lost)))
	}
	for code, n := range noRetryAfter {
		findings = append(findings, fmt.Sprintf("%d answers 409 %s (\"being resumed elsewhere\") came without Retry-After, though the client must wait for the claim's lease", n, code))
	}
	for code, n := range warned {
		findings = append(findings, fmt.Sprintf("%d answers carried state_warning %s", n, code))
	}
	for typ, n := range pyErrors {
		findings = append(findings, fmt.Sprintf("%d answers were Python errors %s", n, typ))
	}
	return vs, findings, replays
}

// recoveryPolicy checks that the service answered and got back to half
// its throughput within recoveryTarget of each fault healing.
func recoveryPolicy(figs []faultFigures) []Violation {
	var vs []Violation
	for _, f := range figs {
		if f.rec.err != nil {
			vs = append(vs, Violation{"fault_not_run", f.rec.name, f.rec.err.Error()})
			continue
		}
		if f.firstOK < 0 || f.firstOK > recoveryTarget {
			vs = append(vs, Violation{"slow_recovery", f.rec.name, fmt.Sprintf("first success after the heal: %s (target %s)", secs(f.firstOK), recoveryTarget)})
		}
		if f.back < 0 || f.back > recoveryTarget {
			vs = append(vs, Violation{"slow_recovery", f.rec.name, fmt.Sprintf("throughput back to half its level before the fault: %s (target %s)", secs(f.back), recoveryTarget)})
		}
	}
	return vs
}

// ackedBefore reports whether an append on the session was acknowledged
// before t.
func ackedBefore(h *SessionHistory, t time.Time) bool {
	for _, op := range h.Ops {
		if op.Kind == Append && op.Outcome == Acked && op.Return.Before(t) {
			return true
		}
	}
	return false
}
