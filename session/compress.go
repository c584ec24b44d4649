package session

import (
	"bytes"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/monty-go/monty/runtime"
)

// Dumps are compressed with zstd at its fastest level: on real session
// dumps it is about as fast as lz4 and shrinks them further (see
// BenchmarkCompression and docs/performance.md, "Session state").
var (
	zstdOnce   sync.Once
	zstdEnc    *zstd.Encoder
	zstdDec    *zstd.Decoder // unbounded (no memory limit)
	zstdCapped *zstd.Decoder // DecodeAll stops at the capacity of dst
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		// All are safe for concurrent EncodeAll/DecodeAll; options are
		// valid constants, so construction cannot fail.
		zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
		zstdCapped, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30),
			zstd.WithDecodeAllCapLimit(true))
	})
	return zstdEnc, zstdDec, zstdCapped
}

func compressDump(b []byte) []byte {
	enc, _, _ := zstdCodecs()
	return enc.EncodeAll(b, make([]byte, 0, len(b)/3))
}

// declaredSize is the decompressed size a compressed dump declares in its
// frame header, if it declares one (dumps this package writes always do).
func declaredSize(b []byte) (uint64, bool) {
	var h zstd.Header
	if err := h.Decode(b); err != nil || !h.HasFCS {
		return 0, false
	}
	return h.FrameContentSize, true
}

// decompressDump decompresses a dump. Under a memory limit (max > 0) it
// never produces more than max bytes, whatever the input claims: a small
// blob that expands to gigabytes is refused with a *runtime.StateLimitError
// after at most max bytes of work, not decompressed whole.
func decompressDump(b []byte, max int64) ([]byte, error) {
	_, dec, capped := zstdCodecs()
	if max <= 0 {
		return dec.DecodeAll(b, nil)
	}
	size, ok := declaredSize(b)
	if !ok {
		return decompressStream(b, max)
	}
	if size > uint64(max) {
		return nil, &runtime.StateLimitError{Need: int64(min(size, 1<<62)), Limit: max}
	}
	// The capped decoder writes at most cap(dst) bytes: a frame holding
	// more than it declares fails instead of growing the output.
	return capped.DecodeAll(b, make([]byte, 0, size))
}

// decompressStream decompresses a dump that declares no size, reading at
// most max+1 bytes of output.
func decompressStream(b []byte, max int64) ([]byte, error) {
	r, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > max {
		return nil, &runtime.StateLimitError{Need: max + 1, Limit: max}
	}
	return out, nil
}
