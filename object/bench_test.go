package object

import (
	"strconv"
	"testing"
)

func mediumValue() Value {
	d := make(Dict, 100)
	for i := range d {
		d[i] = Pair{Str("key" + strconv.Itoa(i)), List{Int(i), Str("value"), Float(1.5), Bool(true), None{}}}
	}
	return d
}

func benchEncode(b *testing.B, v Value) {
	buf, err := Encode(v)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = AppendEncode(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDecode(b *testing.B, v Value) {
	buf, err := Encode(v)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	b.Run("int", func(b *testing.B) { benchEncode(b, Int(1234567)) })
	b.Run("dict100", func(b *testing.B) { benchEncode(b, mediumValue()) })
}

func BenchmarkDecode(b *testing.B) {
	b.Run("int", func(b *testing.B) { benchDecode(b, Int(1234567)) })
	b.Run("dict100", func(b *testing.B) { benchDecode(b, mediumValue()) })
}
