// Package object is the Go model of Python values exchanged with the Monty
// interpreter, with their codecs.
//
// Every Python value is a [Value]: a sealed interface implemented only by the
// concrete types of this package, one per wire kind ([Int], [Str], [List],
// [Dict], [Instance], [DateTime], …). Use a type switch to inspect one, or
// [Value.Kind] for its [Kind]. Containers hold their items in Go slices in
// Python's order: a [Dict] is a slice of [Pair]s in insertion order, and sets
// keep the order the interpreter iterated them in.
//
// The codecs are:
//
//   - CBOR, the wire format shared with the interpreter ([Encode],
//     [AppendEncode], [Decode], [DecodePrefix]), specified in docs/values.md
//     of this repository;
//   - Python's repr() and str() ([Repr], [ToStr]);
//   - natural Go values ([FromGo], [ToGo], [Into]);
//   - JSON ([ToJSON], [FromJSON], [JSONCompatible]).
//
// [Equal] compares two values structurally.
//
// # Concurrency and ownership
//
// Values are plain data and immutable by convention: nothing in this package
// modifies a value it is given, so a value may be shared by any number of
// goroutines as long as none of them modifies it. Decoders copy out of their
// input, so decoded values never alias the buffer they came from. Code that
// builds a value and then changes its slices (or the *big.Int of a [BigInt])
// must not do so while another goroutine reads it.
//
// # Limits
//
// Values nest at most [MaxDepth] levels: the top-level value is at level 0 and
// the items of a container (elements, keys, values, attributes, the class of
// an instance) are one level deeper than the container. Encoding, decoding
// and the JSON codec reject deeper values; [Repr] abbreviates them as "...".
// The limit also stops these functions from looping on a Go value that
// contains itself (a List stored inside itself).
package object
