package session

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// TestOtherMontyVersionFallsBackToJSON stores a session, rewrites its blob
// as if another Monty version had written it, and checks that reopening
// restores the JSON view and names what was lost.
func TestOtherMontyVersionFallsBackToJSON(t *testing.T) {
	ctx := context.Background()
	key := []byte("k")
	st := memstore.New(memstore.Options{})
	s, err := Open(ctx, "old", Options{Store: st, SigningKey: key})
	require.NoError(t, err)
	_, err = s.Exec(ctx, "data = {'a': [1, 2.5, None]}\nname = 'x'\ndef f():\n    return 1\nclass K:\n    pass\n_private = 3")
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))

	obj, err := st.Get(ctx, "old")
	require.NoError(t, err)
	b, err := decodeBlob(obj.Data, [][]byte{key}, 0)
	require.NoError(t, err)
	b.MontyVersion = "0.0.1"
	data, err := b.encode(key, true)
	require.NoError(t, err)
	_, err = st.Put(ctx, "old", data, store.Cond{IfVersion: obj.Info.Version})
	require.NoError(t, err)

	s, err = Open(ctx, "old", Options{Store: st, SigningKey: key})
	require.NoError(t, err)
	defer s.Close(ctx)
	r := s.Restored()
	assert.True(t, r.Found)
	assert.True(t, r.FromJSON)
	assert.Contains(t, r.Reason, "Monty 0.0.1")
	assert.ElementsMatch(t, []string{"f", "K"}, r.Lost)
	res, err := s.Exec(ctx, "print(data['a'][1], name)\ntry:\n    f()\nexcept NameError:\n    print('no f')")
	require.NoError(t, err)
	require.Nil(t, res.Err)
	assert.Equal(t, "2.5 x\nno f\n", res.Output)
}
