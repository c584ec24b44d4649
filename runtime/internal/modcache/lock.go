package modcache

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// cacheLockFile is the file an entry's filler holds locked.
const cacheLockFile = "compiling.lock"

// lockPoll is how often Fill tries again for a lock another process holds.
const lockPoll = 50 * time.Millisecond

// Fill takes the entry's fill lock before compiling into a cold entry,
// waiting while another process (or Entry) holds it, and then reads again
// whether the entry is warm: when the holder finished, the caller loads
// what it stored instead of compiling again. The lock is an advisory lock
// on a file of the entry, which the system releases when its process ends
// however it ends, so that a process killed while compiling leaves the
// entry to the next; a process that must not lose its compilation to its
// own death compiles in another (monty subprocess starts monty
// precompile). Release the lock with unlock once the entry is ready, or
// the compilation failed. Without file locks (Windows) Fill only reads
// whether the entry is warm, and concurrent fillers each compile, as
// before. It fails only when ctx ends while waiting, or the lock file
// cannot be opened.
func (c *Entry) Fill(ctx context.Context) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(c.Dir, cacheLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
	if _, err := os.Stat(filepath.Join(c.Dir, cacheReadyFile)); err == nil {
		c.Warm = true
	}
	return func() { f.Close() }, nil // closing the file releases its lock
}
