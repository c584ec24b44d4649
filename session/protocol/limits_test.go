package protocol_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// TestTurnAndFeedBudgets: the turn budget starts afresh at every resume
// and the feed budget counts every turn of the feed, as Monty's own
// max_turn_duration and max_feed_duration do. The same work, in turns of
// about a seventh of the turn budget each, with a call to the parent
// between them, stays within that turn budget but adds up past a feed
// budget of less than half of it.
func TestTurnAndFeedBudgets(t *testing.T) {
	p := ourWorker(t)
	p.turn(configure(nil))
	// Loop iterations taking about 150 ms here, measured, so that a busy
	// machine leaves each turn a wide margin below its 1 s budget.
	n := 100_000
	for {
		start := time.Now()
		p.last(feed(fmt.Sprintf("n = 0\nwhile n < %d:\n    n += 1", n)))
		if took := time.Since(start); took > 20*time.Millisecond {
			n = int(float64(n) * float64(150*time.Millisecond) / float64(took))
			break
		}
		n *= 4
	}
	code := fmt.Sprintf("for i in range(10):\n    f()\n    n = 0\n    while n < %d:\n        n += 1\n'done'", n)
	run := func(limits *pb.ResourceLimits) *pb.ChildEvent {
		p.turn(request("reset"))
		p.turn(configure(&pb.Configure{Limits: limits}))
		ev := p.last(feed(code))
		for ev.GetFunctionCall() != nil {
			a, r := str("ok")
			ev = p.last(resumeReturn(ev.GetFunctionCall().GetCallId(), a, r))
		}
		return ev
	}
	second := proto.Uint64(1_000_000)
	ev := run(&pb.ResourceLimits{MaxTurnDurationMicros: second})
	require.NotNil(t, ev.GetComplete(), "ten turns of ~150 ms each within a 1 s turn budget: %v", ev)
	ev = run(&pb.ResourceLimits{MaxFeedDurationMicros: proto.Uint64(400_000)})
	exc := ev.GetError().GetException()
	require.NotNil(t, exc, "the same turns add up past a 400 ms feed budget: %v", ev)
	assert.Equal(t, "TimeoutError", exc.GetExcType())
	assert.Regexp(t, `^feed time limit exceeded: [0-9.]+ms > 400ms$`, exc.GetMessage())
}
