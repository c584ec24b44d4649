//go:build unix

package modcache

import (
	"context"
	"errors"
	"testing"
	"time"
)

// One filler at a time: a second waits until the first unlocks, and then
// finds the entry warm when the first marked it ready; a wait ends with
// its context.
func TestFillTakesTurns(t *testing.T) {
	root := t.TempDir()
	first, err := Open(root, "0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	second, err := Open(root, "0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := first.Fill(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	defer cancel()
	if _, err := second.Fill(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second filler did not wait for the first: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		unlock2, err := second.Fill(context.Background())
		if err == nil {
			unlock2()
		}
		got <- err
	}()
	if err := first.MarkReady(); err != nil {
		t.Fatal(err)
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the second filler never got the lock")
	}
	if !second.Warm {
		t.Fatal("the second filler did not see what the first stored")
	}
}
