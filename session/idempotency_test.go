package session_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store/memstore"
)

// keyed is an Idempotency whose answer is the result's repr (or its
// exception) as a JSON string.
func keyed(key, fingerprint string) *session.Idempotency {
	return &session.Idempotency{Key: key, Fingerprint: fingerprint, Answer: func(res *session.Result) []byte {
		switch {
		case res.Err != nil:
			return fmt.Appendf(nil, "%q", "raised "+res.Err.Type)
		case res.Paused != nil:
			return fmt.Appendf(nil, "%q", "paused "+res.Paused.RunID)
		case res.Value == nil:
			return []byte(`null`)
		}
		return fmt.Appendf(nil, "%q", object.Repr(res.Value))
	}}
}

func execKeyed(t *testing.T, s *session.Session, code string, o *session.Idempotency) *session.Result {
	t.Helper()
	res, err := s.ExecOptions(context.Background(), code, session.ExecOptions{Idempotency: o})
	require.NoError(t, err)
	return res
}

// A call retried with its key, by this session or another process's,
// replays the first answer and runs nothing; the key with another request
// is refused; the key's record moves on with the state.
func TestIdempotentCallRunsOnce(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	a := openIn(t, st, "i")
	exec(t, a, "log = []")
	first := execKeyed(t, a, "log.append('once')\nlen(log)", keyed("k1", "fp1"))
	require.Nil(t, first.Replay)
	assert.Equal(t, object.Int(1), first.Value)
	require.True(t, first.Saved)

	again := execKeyed(t, a, "log.append('once')\nlen(log)", keyed("k1", "fp1"))
	require.NotNil(t, again.Replay, "the retry replays")
	assert.Equal(t, `"1"`, string(again.Replay.Answer))
	assert.False(t, again.Saved, "a replay stores nothing")
	assert.Equal(t, first.StateHash, again.StateHash, "the state the first call left")
	assert.Equal(t, first.StateSize, again.StateSize)

	b := openIn(t, st, "i") // another process
	other := execKeyed(t, b, "log.append('once')\nlen(log)", keyed("k1", "fp1"))
	require.NotNil(t, other.Replay)
	assert.Equal(t, first.StateHash, other.Replay.StateHash)

	_, err := b.ExecOptions(ctx, "log.append('other')", session.ExecOptions{Idempotency: keyed("k1", "fp2")})
	var reused *session.KeyReusedError
	require.ErrorAs(t, err, &reused)
	assert.ErrorIs(t, err, session.ErrKeyReused)
	assert.Equal(t, "k1", reused.Key)

	// A later call moves the state on: the record keeps the first call's
	// state, not the stored one.
	later := execKeyed(t, b, "log.append('twice')\nlen(log)", keyed("k2", "fp"))
	assert.Equal(t, object.Int(2), later.Value)
	replay := execKeyed(t, a, "anything", keyed("k1", "fp1"))
	require.NotNil(t, replay.Replay)
	assert.Equal(t, first.StateHash, replay.StateHash)
	assert.NotEqual(t, later.StateHash, replay.StateHash)
	assert.Equal(t, object.List{object.Str("once"), object.Str("twice")}, exec(t, a, "log").Value, "each applied once")
}

// A call whose code raised stores its key with the state as it was: its
// retry replays the exception instead of running again; so does a call
// whose state was over the size cap.
func TestIdempotentFailedCallIsNotRunAgain(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := openIn(t, st, "f")
	res := execKeyed(t, s, "x = 1\nraise ValueError('no')", keyed("k", "fp"))
	require.NotNil(t, res.Err)
	assert.False(t, res.Saved)
	require.True(t, res.HasState, "the key is stored, with the state as it was (none)")
	retry := execKeyed(t, openIn(t, st, "f"), "x = 1\nraise ValueError('no')", keyed("k", "fp"))
	require.NotNil(t, retry.Replay)
	assert.Equal(t, `"raised ValueError"`, string(retry.Replay.Answer))
	assert.Equal(t, res.StateHash, retry.StateHash)
	assert.Equal(t, []string(nil), s.Globals(), "x was not kept")

	capped := open(t, "big", session.Options{Store: memstore.New(memstore.Options{}), MaxStateSize: 4096, NoCompression: true})
	big := execKeyed(t, capped, "big = 'x' * 100000\n1", keyed("k", "fp"))
	require.False(t, big.Saved)
	require.NotEmpty(t, big.NotSavedReason)
	retried := execKeyed(t, capped, "big = 'x' * 100000\n1", keyed("k", "fp"))
	require.NotNil(t, retried.Replay, "the key is stored without the state")
}

// Two processes run the same keyed request at once: one stores it, the
// other's save loses the compare-and-set and answers with the winner's
// answer instead of a conflict.
func TestIdempotentRaceAnswersTheWinner(t *testing.T) {
	st := memstore.New(memstore.Options{})
	a := openIn(t, st, "r")
	exec(t, a, "log = []")
	host := &runtime.Host{Functions: map[string]runtime.Function{
		"meanwhile": {Func: func(ctx context.Context, _ []object.Value, _ []object.Pair) (object.Value, error) {
			res, err := a.ExecOptions(ctx, "log.append('a')\nlog", session.ExecOptions{Idempotency: keyed("same", "fp")})
			if err == nil && res.Err != nil {
				err = res.Err
			}
			return object.None{}, err
		}},
	}}
	b := open(t, "r", session.Options{Store: st, Host: host})
	res := execKeyed(t, b, "meanwhile()\nlog.append('b')\nlog", keyed("same", "fp"))
	require.NotNil(t, res.Replay, "b lost the race to a call with its key")
	assert.Equal(t, `"['a']"`, string(res.Replay.Answer))
	assert.Equal(t, object.List{object.Str("a")}, exec(t, b, "log").Value)
}

// A resume retried with its key replays the first answer: the run it
// continued is over, so without the key the retry would fail.
func TestIdempotentResume(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s := openIn(t, st, "p")
	res, err := s.ExecOptions(ctx, "got = ask('q')\ngot * 2", session.ExecOptions{Tools: tools, Idempotency: keyed("e", "exec")})
	require.NoError(t, err)
	require.NotNil(t, res.Paused)
	replay := execKeyed(t, s, "ignored", keyed("e", "exec"))
	require.NotNil(t, replay.Replay, "a paused answer replays too")
	assert.Equal(t, fmt.Sprintf("%q", "paused "+res.Paused.RunID), string(replay.Replay.Answer))

	p := res.Paused
	results := []session.ToolResult{{ID: p.Calls[0].ID, Value: object.Int(21)}}
	done, err := s.ResumeOptions(ctx, p.RunID, results, session.ResumeOptions{Idempotency: keyed("r", "resume")})
	require.NoError(t, err)
	assert.Equal(t, object.Int(42), done.Value)
	again, err := openIn(t, st, "p").ResumeOptions(ctx, p.RunID, results, session.ResumeOptions{Idempotency: keyed("r", "resume")})
	require.NoError(t, err)
	require.NotNil(t, again.Replay)
	assert.Equal(t, `"42"`, string(again.Replay.Answer))
	_, err = s.Resume(ctx, p.RunID, results)
	require.ErrorIs(t, err, session.ErrRunNotPaused, "without the key the retry is refused")
}

// Keys are refused where they cannot work: empty or too long, and on a
// session that stores nothing.
func TestIdempotencyKeyRefused(t *testing.T) {
	ctx := context.Background()
	s := openIn(t, memstore.New(memstore.Options{}), "k")
	for _, key := range []string{"", string(make([]byte, session.MaxKeyLength+1))} {
		_, err := s.ExecOptions(ctx, "1", session.ExecOptions{Idempotency: keyed(key, "fp")})
		require.ErrorIs(t, err, runtime.ErrInvalidOption)
	}
	eph := open(t, "e", session.Options{Store: memstore.New(memstore.Options{}), Ephemeral: true})
	_, err := eph.ExecOptions(ctx, "1", session.ExecOptions{Idempotency: keyed("k", "fp")})
	require.ErrorIs(t, err, runtime.ErrInvalidOption)
}
