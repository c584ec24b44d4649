package main

import (
	"strings"
	"testing"
	"time"
)

// hist builds a session history from ops written as
// (client, kind, value, call ms, return ms, outcome, list).
type hop struct {
	client  int
	read    bool
	value   string
	call    int
	ret     int
	outcome Outcome
	list    string // comma-separated
}

func hist(id string, hops ...hop) SessionHistory {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := SessionHistory{ID: id}
	for _, o := range hops {
		op := Op{Session: id, Client: o.client, Value: o.value, Key: "k-" + o.value,
			Call: t0.Add(time.Duration(o.call) * time.Millisecond), Return: t0.Add(time.Duration(o.ret) * time.Millisecond),
			Outcome: o.outcome}
		if o.read {
			op.Kind = Read
		}
		if o.list != "" {
			op.List = strings.Split(o.list, ",")
		}
		op.Attempts = []Attempt{{Class: "200"}}
		h.Ops = append(h.Ops, op)
	}
	return h
}

func kinds(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

func TestCheckPasses(t *testing.T) {
	for _, h := range []SessionHistory{
		// Sequential appends, then the final read.
		hist("seq",
			hop{0, false, "a", 0, 10, Acked, "a"},
			hop{0, false, "b", 20, 30, Acked, "a,b"},
			hop{0, true, "", 40, 50, Acked, "a,b"}),
		// Two clients overlapping: b took effect before a although a was
		// called first.
		hist("overlap",
			hop{0, false, "a", 0, 30, Acked, "b,a"},
			hop{1, false, "b", 5, 20, Acked, "b"},
			hop{0, true, "", 40, 50, Acked, "b,a"}),
		// An append that timed out but was applied, and one that timed out
		// and was not: both fine, once each at most.
		hist("unknown",
			hop{0, false, "a", 0, 10, Acked, "a"},
			hop{0, false, "b", 20, 30, Unknown, ""},
			hop{1, false, "c", 25, 35, Unknown, ""},
			hop{0, false, "d", 40, 50, Acked, "a,b,d"},
			hop{0, true, "", 60, 70, Acked, "a,b,d"}),
		// A refused append (the code raised) that is nowhere.
		hist("refused",
			hop{0, false, "a", 0, 10, Acked, "a"},
			hop{0, false, "b", 20, 30, Refused, ""},
			hop{0, true, "", 40, 50, Acked, "a"}),
	} {
		res := Check([]SessionHistory{h})
		if len(res.Violations) != 0 {
			t.Errorf("%s: violations %v", h.ID, res.Violations)
		}
	}
}

func TestCheckFails(t *testing.T) {
	for _, tc := range []struct {
		h    SessionHistory
		want string
	}{
		{hist("lost",
			hop{0, false, "a", 0, 10, Acked, "a"},
			hop{0, false, "b", 20, 30, Acked, "a,b"},
			hop{0, true, "", 40, 50, Acked, "a"}), "lost_ack"},
		// A retry applied twice: the list holds b twice.
		{hist("dup",
			hop{0, false, "a", 0, 10, Acked, "a"},
			hop{0, false, "b", 20, 30, Acked, "a,b,b"},
			hop{0, true, "", 40, 50, Acked, "a,b,b"}), "duplicate"},
		// Stale answer: b is called after a returned, yet b's list lacks a.
		{hist("stale",
			hop{0, false, "a", 0, 10, Acked, "a"},
			hop{1, false, "b", 20, 30, Acked, "b"},
			hop{0, true, "", 40, 50, Acked, "a,b"}), "not_linearizable"},
		// An append answered as not done whose value is there anyway.
		{hist("refused",
			hop{0, false, "a", 0, 10, Refused, ""},
			hop{0, true, "", 40, 50, Acked, "a"}), "refused_but_applied"},
		// The session came back empty (state lost) and kept going.
		{hist("reset",
			hop{0, false, "a", 0, 10, Acked, "a"},
			hop{0, false, "b", 20, 30, Acked, "b"},
			hop{0, true, "", 40, 50, Acked, "b"}), "lost_ack"},
		{hist("noread",
			hop{0, false, "a", 0, 10, Acked, "a"},
			hop{0, true, "", 40, 50, Unknown, ""}), "final_read_failed"},
	} {
		res := Check([]SessionHistory{tc.h})
		if !strings.Contains(strings.Join(kinds(res.Violations), " "), tc.want) {
			t.Errorf("%s: want a %s violation, got %v", tc.h.ID, tc.want, res.Violations)
		}
	}
}

func TestCheckLossExpected(t *testing.T) {
	h := hist("flushed",
		hop{0, false, "a", 0, 10, Acked, "a"},
		hop{0, true, "", 40, 50, Acked, ""})
	h.LossExpected = true
	res := Check([]SessionHistory{h})
	if len(res.Violations) != 0 || len(res.Expected) == 0 {
		t.Fatalf("want the loss reported apart, got violations %v, expected %v", res.Violations, res.Expected)
	}
}
