package session

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime"
)

// realDump returns the REPL dump of the 1 MB benchmark workload plus some
// functions and classes.
func realDump(b *testing.B) []byte {
	ctx := context.Background()
	e, err := runtime.Default(ctx)
	require.NoError(b, err)
	it, err := e.NewInterpreter(ctx)
	require.NoError(b, err)
	b.Cleanup(func() { _ = it.Close(ctx) })
	r, err := it.NewREPL(ctx)
	require.NoError(b, err)
	src, err := os.ReadFile("../testdata/bench/data_1mb.py")
	require.NoError(b, err)
	_, err = r.Run(ctx, string(src)+"\nclass C:\n    def f(self):\n        return 1\nobjs = [C() for _ in range(1000)]\nnums = list(range(20000))")
	require.NoError(b, err)
	dump, err := r.Dump(ctx)
	require.NoError(b, err)
	return dump
}

// BenchmarkCompression compares zstd (fastest level, what sessions use)
// with lz4 on a real dump: time per compress+decompress, and the ratio.
func BenchmarkCompression(b *testing.B) {
	dump := realDump(b)
	b.Run("zstd", func(b *testing.B) {
		b.SetBytes(int64(len(dump)))
		var size int
		for b.Loop() {
			c := compressDump(dump)
			size = len(c)
			d, err := decompressDump(c, 0)
			if err != nil || len(d) != len(dump) {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(dump))/float64(size), "ratio")
	})
	b.Run("lz4", func(b *testing.B) {
		b.SetBytes(int64(len(dump)))
		var size int
		for b.Loop() {
			var buf bytes.Buffer
			w := lz4.NewWriter(&buf)
			_, _ = w.Write(dump)
			_ = w.Close()
			size = buf.Len()
			d := make([]byte, 0, len(dump))
			out := bytes.NewBuffer(d)
			if _, err := out.ReadFrom(lz4.NewReader(&buf)); err != nil || out.Len() != len(dump) {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(dump))/float64(size), "ratio")
	})
}
