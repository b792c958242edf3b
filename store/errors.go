package store

import "errors"

// Errors of opening and closing.
var (
	// ErrLocked means another process holds the data file.
	ErrLocked = errors.New("data directory is in use by another synapse process")
	// ErrSchemaTooNew means the file was written by a newer version.
	ErrSchemaTooNew = errors.New("data file was written by a newer synapse (schema version too new)")
	// ErrClosed is returned by operations on a closed DB.
	ErrClosed = errors.New("store is closed")
)

// Errors of records.
var (
	// ErrNotFound means no record has that key.
	ErrNotFound = errors.New("not found")
	// ErrExists means a record with that key is already there.
	ErrExists = errors.New("already exists")
)

// Errors of commits.
var (
	// ErrOutcomeUnknown means a commit failed after it began writing the
	// file (a write or an fdatasync failed): its writes may be in the
	// file or not. The store reopens the file before its next commit, so
	// what it reads afterwards is what the file holds; it never retries
	// the sync and then reports success.
	ErrOutcomeUnknown = errors.New("commit outcome unknown")
)
