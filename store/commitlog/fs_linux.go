package commitlog

import (
	"errors"
	"os"
	"syscall"
)

// datasync is fdatasync: the data and what is needed to read it back,
// not the modification time.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// allocate reserves the file's blocks with fallocate, so appends need no
// allocation of their own; file systems without it get the size alone.
func allocate(f *os.File, size int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
			return f.Truncate(size)
		}
		return err
	}
}
