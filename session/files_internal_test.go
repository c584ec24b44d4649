package session

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/runtime/typecheck"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// entry is one entry of a hand-made files section, written as
// docs/state-format.md describes it; size is the declared stored size (-1:
// the data's), data the contents as stored in encoding enc.
type entry struct {
	kind  byte
	path  string
	mtime int64 // unix nanoseconds
	enc   byte
	size  int64
	data  string
}

func file(p, data string) entry { return entry{kind: kindFile, path: p, size: -1, data: data} }
func dir(p string) entry        { return entry{kind: kindDir, path: p} }

// section writes entries as a files section declaring count entries (-1:
// as many as given).
func section(count int, entries ...entry) []byte {
	if count < 0 {
		count = len(entries)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(count))
	for _, e := range entries {
		out = append(out, e.kind)
		out = binary.BigEndian.AppendUint16(out, uint16(len(e.path)))
		out = append(out, e.path...)
		out = binary.BigEndian.AppendUint64(out, uint64(e.mtime))
		if e.kind == kindFile {
			size := e.size
			if size < 0 {
				size = int64(len(e.data))
			}
			out = append(out, e.enc)
			out = binary.BigEndian.AppendUint32(out, uint32(size))
			out = append(out, e.data...)
		}
	}
	return out
}

// TestForgedFilesSections stores signed blobs whose files sections a
// forger (or a bug) made: bad paths, duplicates, a file under a file,
// sizes and counts that lie, unknown kinds, trailing bytes, a compressed
// section that does not decompress. Opening refuses each as ErrCorrupt and
// keeps it aside, untouched; the file operations refuse it too; asked to,
// the session starts fresh with no files.
func TestForgedFilesSections(t *testing.T) {
	ctx := context.Background()
	key := []byte("forgery-key")
	forged := map[string][]byte{
		"dot-dot":          section(-1, file("../evil.txt", "x")),
		"inner dot-dot":    section(-1, dir("a"), file("a/../../evil.txt", "x")),
		"absolute":         section(-1, file("/etc/passwd", "x")),
		"NUL":              section(-1, file("a\x00.txt", "x")),
		"empty name":       section(-1, file("", "x")),
		"duplicate":        section(-1, file("a", "x"), file("a", "y")),
		"file under file":  section(-1, file("a", "x"), file("a/b", "y")),
		"missing parent":   section(-1, file("a/b", "y")),
		"out of order":     section(-1, file("b", "x"), file("a", "y")),
		"size too large":   section(-1, entry{kind: kindFile, path: "a", size: 1 << 20, data: "short"}),
		"size too small":   section(-1, entry{kind: kindFile, path: "a", size: 2, data: "longer"}),
		"count too large":  section(1000, file("a", "x")),
		"count too small":  section(1, file("a", "x"), file("b", "y")),
		"count huge":       section(1<<31, file("a", "x")),
		"unknown kind":     section(-1, entry{kind: 7, path: "a"}),
		"truncated":        section(-1, file("a", "x"))[:9],
		"name too long":    section(-1, file(strings.Repeat("n", 256), "x")),
		"not UTF-8":        section(-1, file("a\xff", "x")),
		"compressed junk":  section(-1, entry{kind: kindFile, path: "a", enc: encZstd, size: -1, data: "\x28\xb5\x2f\xfdnot zstd at all"}),
		"unknown encoding": section(-1, entry{kind: kindFile, path: "a", enc: 9, size: -1, data: "x"}),
		"three byte count": {0, 0, 1},
	}
	for name, sec := range forged {
		t.Run(name, func(t *testing.T) {
			st := memstore.New(memstore.Options{})
			b := &blob{MontyVersion: "1.4.0", JSON: []byte("{}"), JSONOnly: true, Files: sec}
			data, err := b.encode(key, false)
			require.NoError(t, err)
			_, err = st.Put(ctx, "forged", data, store.Cond{})
			require.NoError(t, err)
			opts := Options{Store: st, SigningKey: key, Files: &Files{}}

			_, err = Open(ctx, "forged", opts)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), "files section")
			obj, err := st.Get(ctx, "forged")
			require.NoError(t, err)
			assert.Equal(t, data, obj.Data, "never overwritten")
			list, err := st.List(ctx)
			require.NoError(t, err)
			assert.Len(t, list, 2, "a copy is kept aside")

			_, err = ListFiles(ctx, "forged", opts)
			require.ErrorIs(t, err, ErrCorrupt)
			_, err = WriteFile(ctx, "forged", "ok.txt", []byte("x"), opts)
			require.ErrorIs(t, err, ErrCorrupt)
			obj, err = st.Get(ctx, "forged")
			require.NoError(t, err)
			assert.Equal(t, data, obj.Data, "a refused write changes nothing")

			opts.FreshOnCorrupt = true
			s, err := Open(ctx, "forged", opts)
			require.NoError(t, err)
			defer s.Close(ctx)
			files, err := s.Files()
			require.NoError(t, err)
			assert.Empty(t, files)
		})
	}
}

// TestCompressedFilesBomb: compressed files expanding to more than the
// limits allow are refused before they are expanded whole.
func TestCompressedFilesBomb(t *testing.T) {
	z := string(compressDump(make([]byte, 8<<20)))
	require.Less(t, len(z), 4096)
	sec := section(-1, entry{kind: kindFile, path: "zeros", enc: encZstd, size: -1, data: z})
	_, _, err := decodeFiles(sec, vfs.MemFSLimits{MaxBytes: 1 << 20, MaxEntries: 10})
	require.ErrorIs(t, err, vfs.ErrNoSpace)
	two := section(-1, entry{kind: kindFile, path: "a", enc: encZstd, size: -1, data: z}, entry{kind: kindFile, path: "b", enc: encZstd, size: -1, data: z})
	_, _, err = decodeFiles(two, vfs.MemFSLimits{MaxBytes: 12 << 20, MaxEntries: 10})
	require.ErrorIs(t, err, vfs.ErrNoSpace, "the limit is on all files together")
	files, _, err := decodeFiles(sec, vfs.MemFSLimits{MaxBytes: 16 << 20, MaxEntries: 10})
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Len(t, files[0].Data, 8<<20)
}

// TestBlobVersion3RoundTrip: a blob with files and a type check context
// reads back as written; one with files and no context too; the sections
// are where docs/state-format.md puts them.
func TestBlobVersion3RoundTrip(t *testing.T) {
	files := []vfs.MemFile{
		{Path: "d", Dir: true, ModTime: time.Unix(0, 1)},
		{Path: "d/f.txt", Data: []byte(strings.Repeat("abc", 200)), ModTime: time.Unix(0, 2)},
		{Path: "empty", ModTime: time.Unix(0, 3)},
		{Path: "small", Data: []byte("small"), ModTime: time.Unix(0, 4)},
	}
	sec, _ := encodeFiles(files, true, nil)
	z := compressDump(files[1].Data)
	assert.Equal(t, section(-1, entry{kind: kindDir, path: "d", mtime: 1}, entry{kind: kindFile, path: "d/f.txt", mtime: 2, enc: encZstd, size: -1, data: string(z)},
		entry{kind: kindFile, path: "empty", mtime: 3, size: -1}, entry{kind: kindFile, path: "small", mtime: 4, size: -1, data: "small"}),
		sec, "the layout of docs/state-format.md")
	for _, tc := range []*typecheck.Context{nil, {Code: "x: int = 1\n"}} {
		b := &blob{MontyVersion: "1.4.0", Names: []string{"x"}, JSON: []byte(`{"x":1}`), Dump: []byte(strings.Repeat("dump", 100)), TypeCheck: tc, Files: sec}
		data, err := b.encode([]byte("k"), true)
		require.NoError(t, err)
		assert.Equal(t, byte(3), data[4])
		assert.Equal(t, byte(flagSigned|flagCompressed), data[5])
		got, err := decodeBlob(data, [][]byte{[]byte("k")}, 0)
		require.NoError(t, err)
		assert.Equal(t, tc, got.TypeCheck)
		assert.Equal(t, []byte(strings.Repeat("dump", 100)), got.Dump)
		decoded, cache, err := decodeFiles(got.Files, vfs.MemFSLimits{MaxBytes: 1 << 20, MaxEntries: 10})
		require.NoError(t, err)
		assert.Equal(t, files, decoded)

		// Encoding the decoded files again reuses every stored form.
		again, _ := encodeFiles(decoded, true, cache)
		assert.Equal(t, got.Files, again)
		assert.Len(t, cache, 2)
		// Unless compression is off: then every file is stored raw.
		raw, _ := encodeFiles(decoded, false, cache)
		assert.Equal(t, section(-1, entry{kind: kindDir, path: "d", mtime: 1}, entry{kind: kindFile, path: "d/f.txt", mtime: 2, size: -1, data: strings.Repeat("abc", 200)},
			entry{kind: kindFile, path: "empty", mtime: 3, size: -1}, entry{kind: kindFile, path: "small", mtime: 4, size: -1, data: "small"}), raw)

		in, err := Inspect(data, []byte("k"))
		require.NoError(t, err)
		assert.Equal(t, int64(len(sec)), in.FilesSize)
	}
	// Without files, a context still makes version 2.
	data, err := (&blob{MontyVersion: "1.4.0", JSON: []byte(`{}`), TypeCheck: &typecheck.Context{}}).encode(nil, false)
	require.NoError(t, err)
	assert.Equal(t, byte(2), data[4])
}

// FuzzFilesSection feeds arbitrary bytes to the files section decoder and
// the tree check behind it: they fail cleanly or succeed, never panic, and
// what they accept is within the limits.
func FuzzFilesSection(f *testing.F) {
	f.Add(section(-1, dir("a"), file("a/b", "x")))
	f.Add(section(-1, file("../x", "x")))
	f.Add(section(-1, entry{kind: kindFile, path: "z", enc: encZstd, size: -1, data: string(compressDump([]byte("yyyy")))}))
	lim := vfs.MemFSLimits{MaxBytes: 1 << 16, MaxEntries: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := newFilesMem(lim)
		_, err := restoreInto(mem, &blob{Files: data})
		if err != nil {
			return
		}
		used, entries := mem.Usage()
		if used > lim.MaxBytes || entries > lim.MaxEntries {
			t.Fatalf("accepted %d bytes in %d entries", used, entries)
		}
	})
}
