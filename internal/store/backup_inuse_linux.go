package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockHolder reports a process holding any record lock on path: its pid,
// -1 when the kernel does not say whose, 0 when nobody. Open file
// description locks see conflicting locks of this very process too, so a
// test may hold the database in-process.
func lockHolder(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return 0, err
	}
	if lk.Type == unix.F_UNLCK {
		return 0, nil
	}
	if lk.Pid <= 0 {
		return -1, nil
	}
	return int(lk.Pid), nil
}
