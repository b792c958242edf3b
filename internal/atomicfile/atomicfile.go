// Package atomicfile writes files so that their path holds either the old
// content or all of the new, even across a power cut: the bytes go to a
// temporary file in the same directory, which is synced, renamed into
// place, and the directory synced after the rename.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// File is a file being written under a temporary name. Commit puts it in
// place; Abort removes it unless it was committed (defer it).
type File struct {
	*os.File
	path      string
	committed bool
}

// Create starts the file that Commit will put at path, with mode.
func Create(path string, mode os.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{File: f, path: path}, nil
}

// Commit syncs the file, closes it and renames it to its path.
func (f *File) Commit() error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", f.Name(), err)
	}
	if err := os.Rename(f.Name(), f.path); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	f.committed = true
	SyncDir(filepath.Dir(f.path))
	return nil
}

// Abort closes and removes the temporary file, unless Commit put it in
// place.
func (f *File) Abort() {
	if !f.committed {
		f.Close()
		os.Remove(f.Name())
	}
}

// Write writes data to path with mode, atomically.
func Write(path string, data []byte, mode os.FileMode) error {
	f, err := Create(path, mode)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return f.Commit()
}

// SyncDir makes a rename in dir durable where the platform allows it.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
