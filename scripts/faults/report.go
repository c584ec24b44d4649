package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// phaseStats are the figures of one phase of a fault.
type phaseStats struct {
	rate     float64 // acknowledged requests per second
	p50, p99 time.Duration
	errors   map[string]int // attempts by class, other than 200
}

// faultFigures are the figures of one fault.
type faultFigures struct {
	rec                   faultRecord
	before, during, after phaseStats
	// firstOK is the time from the heal to the first success of a request
	// sent after it (-1: none in the after phase).
	firstOK time.Duration
	// back is the time from the heal to the start of the first second whose
	// throughput is at least half of the before phase's (-1: not in the
	// after phase).
	back time.Duration
}

// allOps is every operation of a scenario run.
func (r *scenarioRun) allOps() []*Op {
	var ops []*Op
	for _, h := range r.histories {
		for i := range h.Ops {
			ops = append(ops, &h.Ops[i])
		}
	}
	for _, a := range r.approvals {
		ops = append(ops, a.op)
	}
	return ops
}

func stats(ops []*Op, from, to time.Time) phaseStats {
	st := phaseStats{errors: map[string]int{}}
	var lat []time.Duration
	for _, op := range ops {
		if op.Kind == Append && op.Outcome == Acked && !op.Return.Before(from) && op.Return.Before(to) {
			lat = append(lat, op.Return.Sub(op.Call))
		}
		for _, a := range op.Attempts {
			if a.Class != "200" && !a.End.Before(from) && a.End.Before(to) {
				st.errors[a.Class]++
			}
		}
	}
	if secs := to.Sub(from).Seconds(); secs > 0 {
		st.rate = float64(len(lat)) / secs
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	st.p50, st.p99 = pct(0.5), pct(0.99)
	return st
}

// figures computes each fault's figures.
func (r *scenarioRun) figures() []faultFigures {
	ops := r.allOps()
	var out []faultFigures
	for _, rec := range r.faults {
		f := faultFigures{rec: rec, firstOK: -1, back: -1,
			before: stats(ops, rec.start, rec.inject),
			during: stats(ops, rec.inject, rec.heal),
			after:  stats(ops, rec.heal, rec.end)}
		var first time.Time
		for _, op := range ops {
			for _, a := range op.Attempts {
				if a.Class == "200" && !a.Start.Before(rec.heal) && a.End.Before(rec.end) && (first.IsZero() || a.End.Before(first)) {
					first = a.End
				}
			}
		}
		if !first.IsZero() {
			f.firstOK = first.Sub(rec.heal)
		}
		want := f.before.rate / 2
		for t := rec.heal; !t.Add(time.Second).After(rec.end); t = t.Add(100 * time.Millisecond) {
			if st := stats(ops, t, t.Add(time.Second)); st.rate >= want && st.rate > 0 {
				f.back = t.Sub(rec.heal)
				break
			}
		}
		out = append(out, f)
	}
	return out
}

func ms(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f", float64(d.Microseconds())/1000)
}

func secs(d time.Duration) string {
	if d < 0 {
		return "not within the after phase"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func errorList(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func mergeErrors(ms ...map[string]int) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		for k, v := range m {
			out[k] += v
		}
	}
	return out
}

// figuresTable is the Markdown table of every fault's figures.
func figuresTable(figs []faultFigures) string {
	var b strings.Builder
	b.WriteString("| fault | req/s before / during / after | p50 ms before / during / after | p99 ms before / during / after | first success after heal | throughput back after | errors seen by clients (during and after) |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range figs {
		fmt.Fprintf(&b, "| %s | %.1f / %.1f / %.1f | %s / %s / %s | %s / %s / %s | %s | %s | %s |\n",
			f.rec.name, f.before.rate, f.during.rate, f.after.rate,
			ms(f.before.p50), ms(f.during.p50), ms(f.after.p50),
			ms(f.before.p99), ms(f.during.p99), ms(f.after.p99),
			secs(f.firstOK), secs(f.back), errorList(mergeErrors(f.during.errors, f.after.errors)))
	}
	return b.String()
}
