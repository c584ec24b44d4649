//go:build !unix

package runtimetest

import "testing"

// pipes cannot gate without named pipes: the entry stays empty, the
// background compilation is a real one and release does nothing.
func pipes(testing.TB, map[string]string) func() { return func() {} }
