//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package dirstore

import (
	"context"
	"os"
	"sync"
)

// On systems without flock or LockFileEx (Plan 9, Solaris, WASI, ...) the
// lock is a mutex per lock path: writers are serialized within one process
// only. Sharing a directory between processes is not safe there.
var (
	locksMu sync.Mutex
	locks   = map[string]*lockEntry{}
)

type lockEntry struct {
	ch   chan struct{}
	refs int
}

type fileLock struct {
	path string
	e    *lockEntry
}

func lock(ctx context.Context, path string) (*fileLock, error) {
	locksMu.Lock()
	e := locks[path]
	if e == nil {
		e = &lockEntry{ch: make(chan struct{}, 1)}
		locks[path] = e
	}
	e.refs++
	locksMu.Unlock()
	select {
	case e.ch <- struct{}{}:
		return &fileLock{path: path, e: e}, nil
	case <-ctx.Done():
		release(path, e)
		return nil, ctx.Err()
	}
}

func release(path string, e *lockEntry) {
	locksMu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(locks, path)
	}
	locksMu.Unlock()
}

func (l *fileLock) remove() {}

func (l *fileLock) unlock() {
	<-l.e.ch
	release(l.path, l.e)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	_ = d.Sync() // not every system can sync a directory
	return nil
}

// rename atomically replaces newpath by oldpath.
func rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
