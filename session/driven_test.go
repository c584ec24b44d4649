package session

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// driver is a REPL run outside a Session, as the monty.v1 server's worker
// runs one.
type driver struct {
	it   *runtime.Interpreter
	repl *runtime.REPL
}

func newDriver(t *testing.T, dump []byte) *driver {
	t.Helper()
	ctx := context.Background()
	eng, err := runtime.Default(ctx)
	require.NoError(t, err)
	it, err := eng.NewInterpreter(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = it.Close(ctx) })
	d := &driver{it: it}
	if dump == nil {
		d.repl, err = it.NewREPL(ctx)
	} else {
		d.repl, _, err = it.LoadREPL(ctx, dump)
	}
	require.NoError(t, err)
	return d
}

func (d *driver) run(t *testing.T, code string) object.Value {
	t.Helper()
	v, err := d.repl.Run(context.Background(), code)
	require.NoError(t, err)
	return v
}

func (d *driver) live() DrivenREPL {
	return DrivenREPL{Interpreter: d.it, REPL: d.repl, Limits: runtime.DefaultLimits()}
}

func TestDrivenSessionsAreSessions(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	opts := Options{Store: st, SigningKey: []byte("driven-key")}
	drv := Driver{Name: "test", State: []byte("configuration")}

	dr := newDriver(t, nil)
	dr.run(t, "x = [1]\ndef f():\n    return len(x)")
	held, err := NewDriven(ctx, "s1", opts)
	require.NoError(t, err)
	require.NoError(t, held.Save(ctx, dr.live(), drv))
	dr.run(t, "x.append(2)")
	require.NoError(t, held.Save(ctx, dr.live(), drv))
	obj, err := st.Get(ctx, "s1")
	require.NoError(t, err)
	b, err := decodeBlob(obj.Data, [][]byte{opts.SigningKey}, 0)
	require.NoError(t, err)
	require.NotNil(t, b.Parts, "a save of the same REPL stores what it added, in parts")
	assert.Len(t, b.Parts.segments, 2)
	assert.Equal(t, []string{"x", "f"}, b.Names)
	assert.JSONEq(t, `{"x": [1, 2]}`, string(b.JSON))
	assert.Equal(t, &drv, b.Driver)

	// A second Driven of a new id never overwrites a stored session.
	other, err := NewDriven(ctx, "s1", opts)
	require.NoError(t, err)
	assert.ErrorIs(t, other.Save(ctx, dr.live(), drv), store.ErrConflict)

	// A Session continues it, keeping the driver's section.
	s, err := Open(ctx, "s1", opts)
	require.NoError(t, err)
	res, err := s.Exec(ctx, "x.append(3)\nf()")
	require.NoError(t, err)
	assert.Equal(t, object.Int(3), res.Value)
	require.NoError(t, s.Close(ctx))

	// The driver finds it again, with the Session's changes, and its save
	// of an outdated state conflicts.
	assert.ErrorIs(t, held.Save(ctx, dr.live(), drv), store.ErrConflict)
	again, err := OpenDriven(ctx, "s1", opts)
	require.NoError(t, err)
	assert.Equal(t, &drv, again.Driver())
	dump, err := again.Dump()
	require.NoError(t, err)
	dr2 := newDriver(t, dump)
	again.Bind(dr2.repl)
	assert.Equal(t, object.Int(3), dr2.run(t, "f()"))
	require.NoError(t, again.Save(ctx, dr2.live(), drv))
}

func TestDrivenFeedIsContinuedOnlyByItsDriver(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	opts := Options{Store: st}
	dr := newDriver(t, nil)
	dr.run(t, "a = 1")
	held, err := NewDriven(ctx, "s2", opts)
	require.NoError(t, err)
	require.NoError(t, held.Save(ctx, dr.live(), Driver{Name: "test"}))
	ex, err := dr.repl.Feed(ctx, "a = 2\nb = ask(1)")
	require.NoError(t, err)
	require.False(t, ex.Done(), "paused at the lookup of ask")
	live := dr.live()
	live.Feed = ex
	require.NoError(t, held.Save(ctx, live, Driver{Name: "test"}))

	_, err = Open(ctx, "s2", opts)
	require.ErrorIs(t, err, ErrDriverFeed)
	assert.Contains(t, err.Error(), "continue it over test")
	info, err := OpenDriven(ctx, "s2", opts)
	require.NoError(t, err)
	assert.True(t, info.Driver().Feed)
	dump, err := info.Dump()
	require.NoError(t, err)
	it := newDriver(t, nil).it
	repl, paused, err := it.LoadREPL(ctx, dump)
	require.NoError(t, err)
	require.NotNil(t, paused, "the feed comes back paused")
	assert.NotNil(t, repl)
}

func TestDrivenRefusesWhatItCannotRun(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s, err := Open(ctx, "json", Options{Store: st, JSONOnly: true})
	require.NoError(t, err)
	_, err = s.Exec(ctx, "x = 1")
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	_, err = OpenDriven(ctx, "json", Options{Store: st})
	assert.ErrorIs(t, err, ErrRunUnloadable)

	_, err = st.Put(ctx, "bad", []byte("MGOS\x07 not a blob"), store.Cond{})
	require.NoError(t, err)
	_, err = OpenDriven(ctx, "bad", Options{Store: st})
	var ce *CorruptStateError
	require.ErrorAs(t, err, &ce)
	assert.Regexp(t, `^bad\.corrupt\.[0-9a-f]{16}$`, ce.QuarantinedAs)
	kept, err := st.Get(ctx, ce.QuarantinedAs)
	require.NoError(t, err)
	assert.Equal(t, []byte("MGOS\x07 not a blob"), kept.Data)
}
