package session

import (
	"context"
	"fmt"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

func partsSnippet(i int) string {
	return fmt.Sprintf("def f%d(x):\n    return x * %d + len(str(x))\nv%d = f%d(%d)\nv%d", i, i, i, i, i, i)
}

// storedBlob reads and decodes what the store holds for id.
func storedBlob(t *testing.T, st *memstore.Store, id string, keys ...[]byte) *blob {
	t.Helper()
	obj, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	b, err := decodeBlob(obj.Data, keys, 0)
	require.NoError(t, err)
	return b
}

// A continued session is stored in parts (version 5): each save adds what
// the call added, segments merge as they pile up, and another session
// loads the joined state and continues it.
func TestStateInParts(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"compressed", Options{}},
		{"uncompressed", Options{NoCompression: true}},
		{"signed", Options{SigningKey: []byte("key")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st := memstore.New(memstore.Options{})
			opts := c.opts
			opts.Store = st
			s, err := Open(ctx, "p", opts)
			require.NoError(t, err)
			defer s.Close(ctx)
			const n = 40
			compressed := false
			for i := range n {
				res, err := s.Exec(ctx, partsSnippet(i))
				require.NoError(t, err)
				require.Nil(t, res.Err)
				require.True(t, res.Saved)
				b := storedBlob(t, st, "p", opts.SigningKey)
				require.NotNil(t, b.Parts, "save %d", i)
				assert.LessOrEqual(t, len(b.Parts.segments), bits.Len(uint(i+1))+1, "segments after %d saves", i+1)
				for _, seg := range b.Parts.segments {
					assert.Equal(t, !opts.NoCompression && seg.raw >= minCompressed, seg.compressed, "segment of %d bytes", seg.raw)
					compressed = compressed || seg.compressed
				}
			}
			assert.Equal(t, !opts.NoCompression, compressed, "the merged segments grow past the smallest compressed")
			obj, err := st.Get(ctx, "p")
			require.NoError(t, err)
			assert.Equal(t, byte(blobVersionParts), obj.Data[4])

			other, err := Open(ctx, "p", opts)
			require.NoError(t, err)
			defer other.Close(ctx)
			res, err := other.Exec(ctx, "f7(1) + v39")
			require.NoError(t, err)
			require.Nil(t, res.Err)
			assert.Equal(t, object.Int(7+1+39*39+2), res.Value)
			// The other session continues the lineage it loaded.
			_, err = other.Exec(ctx, partsSnippet(n))
			require.NoError(t, err)
			third, err := Open(ctx, "p", opts)
			require.NoError(t, err)
			defer third.Close(ctx)
			res, err = third.Exec(ctx, fmt.Sprintf("v%d + f3(0)", n))
			require.NoError(t, err)
			assert.Equal(t, object.Int(n*n+2+1), res.Value)
		})
	}
}

// A failed call rolls back to the stored parts, and the next save
// continues from them: what the failed call compiled is not lost from the
// stored state or duplicated in it.
func TestPartsAfterRollback(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s, err := Open(ctx, "r", Options{Store: st})
	require.NoError(t, err)
	defer s.Close(ctx)
	for i := range 5 {
		_, err := s.Exec(ctx, partsSnippet(i))
		require.NoError(t, err)
	}
	res, err := s.Exec(ctx, "def boom():\n    return 1 / 0\nlost = 1\nboom()")
	require.NoError(t, err)
	require.NotNil(t, res.Err)
	_, err = s.Exec(ctx, partsSnippet(5))
	require.NoError(t, err)
	other, err := Open(ctx, "r", Options{Store: st})
	require.NoError(t, err)
	defer other.Close(ctx)
	res, err = other.Exec(ctx, "v5 + f4(1)")
	require.NoError(t, err)
	require.Nil(t, res.Err)
	assert.Equal(t, object.Int(25+4+1+1), res.Value)
	res, err = other.Exec(ctx, "lost")
	require.NoError(t, err)
	assert.NotNil(t, res.Err, "the failed call's globals were rolled back")
}

// A state stored whole (as builds before version 5 wrote it) loads, and
// the next save stores it in parts.
func TestWholeDumpConvertsToParts(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	s, err := Open(ctx, "w", Options{Store: st})
	require.NoError(t, err)
	for i := range 3 {
		_, err := s.Exec(ctx, partsSnippet(i))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close(ctx))

	// Rewrite the entry as version 1: the whole dump, compressed.
	b := storedBlob(t, st, "w")
	eng, err := runtime.Default(ctx)
	require.NoError(t, err)
	whole, err := b.Parts.join(eng, 0)
	require.NoError(t, err)
	b.Dump, b.Parts = whole, nil
	data, err := b.encode(nil, true)
	require.NoError(t, err)
	require.Equal(t, byte(blobVersion), data[4])
	_, err = st.Put(ctx, "w", data, store.Cond{})
	require.NoError(t, err)

	s, err = Open(ctx, "w", Options{Store: st})
	require.NoError(t, err)
	defer s.Close(ctx)
	res, err := s.Exec(ctx, "v2 + f1(1)")
	require.NoError(t, err)
	require.Nil(t, res.Err)
	assert.Equal(t, object.Int(5+2), res.Value)
	assert.NotNil(t, storedBlob(t, st, "w").Parts)
}

// Parts sections that do not parse are corrupt, never a panic.
func TestDamagedPartsAreCorrupt(t *testing.T) {
	good := &dumpParts{segments: []segment{{raw: 3, stored: []byte("abc")}}, state: segment{raw: 2, stored: []byte("st")}}
	enc := good.encode()
	got, err := decodeParts(enc)
	require.NoError(t, err)
	assert.Equal(t, good, got)
	for name, data := range map[string][]byte{
		"empty":            nil,
		"unknown format":   append([]byte{9}, enc[1:]...),
		"truncated":        enc[:len(enc)-1],
		"trailing":         append(append([]byte{}, enc...), 0),
		"too many":         append(append(append([]byte{}, enc[:57]...), 0xff, 0xff, 0xff, 0xff), enc[61:]...),
		"raw size wrong":   append(append(append([]byte{}, enc[:62]...), 0, 0, 0, 9), enc[66:]...),
		"unknown encoding": append(append(append([]byte{}, enc[:61]...), 7), enc[62:]...),
	} {
		_, err := decodeParts(data)
		assert.ErrorIs(t, err, ErrCorrupt, name)
	}
	// A segment whose bytes do not decompress to what it declares.
	bad := &dumpParts{segments: []segment{{raw: 10, stored: compressDump([]byte("12345")), compressed: true}}, state: good.state}
	eng, err := runtime.Default(context.Background())
	require.NoError(t, err)
	_, err = bad.join(eng, 0)
	assert.ErrorIs(t, err, ErrCorrupt)
	// Segments that are not a delta's added parts.
	_, err = good.join(eng, 0)
	assert.ErrorIs(t, err, ErrCorrupt)
}

// Only identifiers are written into the view's code.
func TestViewNamesAreIdentifiers(t *testing.T) {
	for _, ok := range []string{"x", "_x", "x1", "données", "Ω"} {
		assert.True(t, isIdentifier(ok), ok)
	}
	for _, bad := range []string{"", "1x", "a b", "x)", "x\n", "a.b", "x#"} {
		assert.False(t, isIdentifier(bad), bad)
	}
}
