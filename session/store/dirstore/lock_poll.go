//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows

package dirstore

import (
	"context"
	"errors"
	"time"
)

// pollLock takes a file lock by calling try, an attempt that does not wait,
// until it succeeds, fails with an error that is not one of busy, or ctx
// ends. Between attempts it sleeps, 50 µs at first and twice as long each
// time up to about 5 ms, so that ctx can cancel the wait. A failure is
// store.ErrUnavailable, naming path.
func pollLock(ctx context.Context, path string, try func() error, busy ...error) error {
	wait := 50 * time.Microsecond
	for {
		err := try()
		if err == nil {
			return nil
		}
		if !isAny(err, busy) {
			return unavailable("lock", path, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(wait)
		if wait < 5*time.Millisecond {
			wait *= 2
		}
	}
}

// isAny reports whether err is one of targets (errors.Is).
func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
