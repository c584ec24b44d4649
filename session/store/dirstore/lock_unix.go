//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package dirstore

import (
	"context"
	"os"
	"syscall"
)

// fileLock is an exclusive flock(2) on an id's lock file.
type fileLock struct {
	f    *os.File
	path string
}

// lock takes the exclusive lock on path, creating the file if needed. It
// polls with LOCK_NB so that ctx can cancel the wait. Since Delete removes
// lock files (while holding them), a lock obtained on a file that is no
// longer the one at path is dropped and taken again.
func lock(ctx context.Context, path string) (*fileLock, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, unavailable("open lock file", path, err)
		}
		flock := func() error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }
		if err := pollLock(ctx, path, flock, syscall.EWOULDBLOCK, syscall.EINTR); err != nil {
			f.Close()
			return nil, err
		}
		if same(f, path) {
			return &fileLock{f: f, path: path}, nil
		}
		f.Close() // the file was removed (and maybe re-created) meanwhile
	}
}

// same reports whether f is still the file at path.
func same(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	if err != nil {
		return false
	}
	return os.SameFile(a, b)
}

// remove deletes the lock file while the lock is held: waiters then notice
// that they locked a removed file and retry on a fresh one.
func (l *fileLock) remove() {
	_ = os.Remove(l.path)
}

func (l *fileLock) unlock() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// rename atomically replaces newpath by oldpath.
func rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
