package commitlog

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// FS is what the log does to the file system: the seam where the
// power-loss tests record every write and sync (package crashfs). OS is
// the real one.
type FS interface {
	// OpenFile opens name (os.OpenFile's flags and mode).
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes a file.
	Remove(name string) error
	// List returns the names of the files in dir, sorted.
	List(dir string) ([]string, error)
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string) error
	// SyncDir makes the creation and removal of dir's entries durable.
	SyncDir(dir string) error
}

// File is an open segment.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Datasync makes the written data durable (fdatasync).
	Datasync() error
	// Allocate reserves size bytes of disk for the file, which reads as
	// zeros past what was written.
	Allocate(size int64) error
	// Size is the file's size.
	Size() (int64, error)
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error  { return os.Remove(name) }
func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o700) }
func (osFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f osFile) Datasync() error           { return datasync(f.File) }
func (f osFile) Allocate(size int64) error { return allocate(f.File, size) }
func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
