package object

import (
	"testing"
)

// FuzzDecode checks that no input makes the decoder panic, and that whatever
// decodes re-encodes to bytes that decode to an equal value.
func FuzzDecode(f *testing.F) {
	for _, v := range readJSON[vector](f, "vectors.json") {
		f.Add(mustHex(f, v.Hex))
	}
	for _, v := range readJSON[acceptVector](f, "accept.json") {
		f.Add(mustHex(f, v.Hex))
	}
	for _, v := range readJSON[rejectVector](f, "reject.json") {
		f.Add(mustHex(f, v.Hex))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, n, err := DecodePrefix(data)
		if err != nil {
			return
		}
		if n <= 0 || n > len(data) {
			t.Fatalf("consumed %d of %d bytes", n, len(data))
		}
		b, err := Encode(v)
		if err != nil {
			t.Fatalf("decoded %s but cannot encode it: %v", Repr(v), err)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("re-encoding of %s does not decode: %v", Repr(v), err)
		}
		if !Equal(v, back) {
			t.Fatalf("round trip changed %s into %s", Repr(v), Repr(back))
		}
		again, err := Encode(back)
		if err != nil || string(again) != string(b) {
			t.Fatalf("encoding of %s is not stable", Repr(v))
		}
		_ = Repr(v)
		_ = ToStr(v)
		_, _ = ToJSON(v)
		_, _ = ToGo(v)
	})
}
