package session

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	monty "github.com/monty-go/monty/runtime"
)

// streamCompress compresses without a declared size (a streaming writer
// does not know it), as a forged blob would.
func streamCompress(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecompressionBomb is issue 9's item 6 at its root: a 43 KB blob
// holding a 200 MiB dump was decompressed whole. Under a limit, at most the
// limit is ever produced, with or without a declared size.
func TestDecompressionBomb(t *testing.T) {
	huge := make([]byte, 64<<20)
	declared := compressDump(huge)
	undeclared := streamCompress(t, huge)
	_, ok := declaredSize(undeclared)
	require.False(t, ok, "a streamed frame declares no size")
	require.Less(t, len(declared), 64<<10, "a bomb: tiny blob, huge dump")
	huge = nil
	const limit = 1 << 20
	for name, blob := range map[string][]byte{"declared": declared, "undeclared": undeclared} {
		var err error
		n := allocated(func() { _, err = decompressDump(blob, limit) })
		var sl *monty.StateLimitError
		require.ErrorAs(t, err, &sl, name)
		assert.True(t, errors.Is(err, monty.ErrMemoryLimit), name)
		assert.Less(t, n, uint64(16<<20), "%s: work bounded by the limit, not the dump (%d bytes allocated)", name, n)
	}
	// Within the limit it decompresses, both ways.
	small := bytes.Repeat([]byte("monty"), 1000)
	for _, blob := range [][]byte{compressDump(small), streamCompress(t, small)} {
		got, err := decompressDump(blob, limit)
		require.NoError(t, err)
		assert.Equal(t, small, got)
	}
}

// TestDecompressLyingHeader: a frame that declares less than it holds is
// refused, not decompressed past its declaration.
func TestDecompressLyingHeader(t *testing.T) {
	blob := compressDump(make([]byte, 4<<20))
	var h zstd.Header
	require.NoError(t, h.Decode(blob))
	require.True(t, h.HasFCS)
	// The frame header: magic (4), descriptor (1), [window (1)], FCS.
	forged := bytes.Clone(blob)
	fcsAt := 5
	if forged[4]&0x20 == 0 { // no single-segment flag: a window byte first
		fcsAt = 6
	}
	switch forged[4] >> 6 {
	case 2:
		forged[fcsAt], forged[fcsAt+1], forged[fcsAt+2], forged[fcsAt+3] = 0, 0x10, 0, 0 // 4096
	case 3:
		for i := range 8 {
			forged[fcsAt+i] = 0
		}
		forged[fcsAt+1] = 0x10
	default:
		t.Fatalf("frame descriptor %#x: expected a 4- or 8-byte size field", forged[4])
	}
	n, ok := declaredSize(forged)
	require.True(t, ok)
	require.Equal(t, uint64(4096), n)
	got, err := decompressDump(forged, 64<<20)
	require.Error(t, err)
	assert.Less(t, len(got), 4<<20)
}
