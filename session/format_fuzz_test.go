package session

import (
	"crypto/sha256"
	"testing"
)

// FuzzDecodeBlob feeds arbitrary bytes to the blob decoder, with and
// without a signing key. With withSum the input gets a valid checksum
// appended, so the fuzzer reaches the header and section parsing behind it
// (as a foreign or buggy writer could). Decoding must fail cleanly or
// succeed, never panic.
func FuzzDecodeBlob(f *testing.F) {
	valid, err := (&blob{MontyVersion: "1.4.0", Names: []string{"x"}, JSON: []byte(`{"x":1}`), Dump: []byte("dump")}).encode(nil, true)
	if err != nil {
		f.Fatal(err)
	}
	signed, err := (&blob{MontyVersion: "1.4.0", JSON: []byte(`{}`)}).encode([]byte("key"), false)
	if err != nil {
		f.Fatal(err)
	}
	inParts := &dumpParts{segments: []segment{newSegment([]byte("added"), true)}, state: newSegment([]byte("state"), false)}
	parts, err := (&blob{MontyVersion: "1.4.0", Names: []string{}, JSON: []byte(`{}`), Parts: inParts}).encode(nil, true)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(parts, false)
	f.Add(parts[:len(parts)-32], true)
	f.Add(valid, false)
	f.Add(signed, false)
	f.Add(valid[:len(valid)-32], true)
	f.Add([]byte("MGOS\x01"), true)         // the header alone, checksummed
	f.Add([]byte("MGOS\x01\x00\x05"), true) // a version longer than the data
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, data []byte, withSum bool) {
		if withSum {
			sum := sha256.Sum256(data)
			data = append(data[:len(data):len(data)], sum[:]...)
		}
		for _, key := range [][]byte{nil, []byte("key")} {
			b, err := decodeBlob(data, [][]byte{key}, 0)
			if (b == nil) == (err == nil) {
				t.Fatalf("decodeBlob = %v, %v", b, err)
			}
		}
	})
}
