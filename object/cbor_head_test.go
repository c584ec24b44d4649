package object

import (
	"encoding/hex"
	"testing"
)

// TestAppendCBORHead: every argument takes the shortest of the five forms,
// at each boundary, after what dst holds already.
func TestAppendCBORHead(t *testing.T) {
	cases := []struct {
		major byte
		arg   uint64
		want  string
	}{
		{0, 0, "00"},
		{0, 23, "17"},
		{0, 24, "1818"},
		{3, 255, "78ff"},
		{4, 256, "990100"},
		{2, 65535, "59ffff"},
		{1, 65536, "3a00010000"},
		{0, 1<<32 - 1, "1affffffff"},
		{7, 1 << 32, "fb0000000100000000"},
	}
	for _, c := range cases {
		got := AppendCBORHead([]byte{0xaa}, c.major, c.arg)
		if want := "aa" + c.want; hex.EncodeToString(got) != want {
			t.Errorf("AppendCBORHead(%d, %d) = %x, want %s", c.major, c.arg, got, want)
		}
	}
}
