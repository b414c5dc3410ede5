//go:build unix

package dirlife

import (
	"os"

	"golang.org/x/sys/unix"
)

// rootLock is a held flock(2) on the root's lock file.
type rootLock struct{ f *os.File }

// acquireLock opens (creating) the lock file in r and locks it in mode,
// blocking until it can. flock locks belong to the open file description,
// so goroutines of one process exclude one another as processes do.
func acquireLock(r *os.Root, mode lockMode) (*rootLock, error) {
	f, err := r.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if mode == exclusive {
		how = unix.LOCK_EX
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: lockName, Err: err}
	}
	return &rootLock{f}, nil
}

// release unlocks and closes the lock file.
func (l *rootLock) release() {
	l.f.Close() // closing the last descriptor drops the flock
}
