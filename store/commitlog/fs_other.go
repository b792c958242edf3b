//go:build !linux

package commitlog

import "os"

func datasync(f *os.File) error { return f.Sync() }

func allocate(f *os.File, size int64) error { return f.Truncate(size) }
