package session

import (
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Dumps are compressed with zstd at its fastest level: on real session
// dumps it is about as fast as lz4 and shrinks them further (see
// BenchmarkCompression and the README's table).
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		// Both are safe for concurrent EncodeAll/DecodeAll; options are
		// valid constants, so construction cannot fail.
		zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
	})
	return zstdEnc, zstdDec
}

func compressDump(b []byte) []byte {
	enc, _ := zstdCodecs()
	return enc.EncodeAll(b, make([]byte, 0, len(b)/3))
}

func decompressDump(b []byte) ([]byte, error) {
	_, dec := zstdCodecs()
	return dec.DecodeAll(b, nil)
}
