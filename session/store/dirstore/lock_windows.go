//go:build windows

package dirstore

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// fileLock is an exclusive LockFileEx lock on an id's lock file.
type fileLock struct {
	f *os.File
}

// lock takes the exclusive lock on path, creating the file if needed,
// polling so that ctx can cancel the wait. Windows releases the lock when
// the process dies, like flock on Unix.
func lock(ctx context.Context, path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, unavailable("open lock file", path, err)
	}
	lockEx := func() error {
		return windows.LockFileEx(windows.Handle(f.Fd()),
			windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	}
	if err := pollLock(ctx, path, lockEx, windows.ERROR_LOCK_VIOLATION, windows.ERROR_IO_PENDING); err != nil {
		f.Close()
		return nil, err
	}
	return &fileLock{f: f}, nil
}

// remove keeps the lock file on Windows, where a file that other processes
// hold open cannot be replaced safely.
func (l *fileLock) remove() {}

func (l *fileLock) unlock() {
	ol := new(windows.Overlapped)
	_ = windows.UnlockFileEx(windows.Handle(l.f.Fd()), 0, 1, 0, ol)
	_ = l.f.Close()
}

// syncDir is a no-op on Windows, where directories cannot be fsynced;
// NTFS journals the rename itself.
func syncDir(string) error { return nil }

// rename replaces newpath by oldpath (MoveFileEx with
// MOVEFILE_REPLACE_EXISTING). Windows refuses while another handle has
// newpath open without FILE_SHARE_DELETE, as a concurrent reader's does
// for a moment, so it retries for up to a second.
func rename(oldpath, newpath string) error {
	var err error
	for wait := time.Millisecond; wait < time.Second; wait *= 2 {
		if err = os.Rename(oldpath, newpath); err == nil {
			return nil
		}
		time.Sleep(wait)
	}
	return err
}
