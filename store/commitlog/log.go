// Package commitlog is an append-only log of records in preallocated
// segment files, made durable a group at a time: the store's writer
// appends the write-set of a group commit with one write and one
// fdatasync before any caller in the group is answered, and trims what
// a checkpoint has made durable elsewhere. The byte layout is in
// format.go; recovery, which tells a crash's torn tail from corruption,
// in recover.go.
//
// The log is for one writer: Append, Trim, Replay and Close are
// serialised by a mutex, not meant to be called concurrently for speed.
//
// A failed write or fdatasync poisons the log: the group that failed is
// acknowledged to nobody and every later Append fails with ErrPoisoned.
// The page cache after a failed fdatasync says nothing about the disk, so
// the log never syncs again and acknowledges; the caller closes it and
// opens it again, and recovery decides what the disk holds (the failed
// group wholly, in part as a prefix of its records, or not at all).
package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// ErrPoisoned is returned by Append after a write or fdatasync failed.
var ErrPoisoned = errors.New("commitlog: poisoned by a failed write")

// ErrSync is in the error of an Append whose fdatasync failed: the
// group was written and may be read back; whether the disk holds it is
// unknown.
var ErrSync = errors.New("fdatasync failed")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("commitlog: closed")

// Options tune Open.
type Options struct {
	// SegmentSize is the size a segment is preallocated to. Default 16 MiB.
	SegmentSize int64
	// Checkpoint is the last sequence number the caller has made durable
	// elsewhere: the log must reach it and hold every record after it.
	Checkpoint uint64
	// FS is the file system; nil is OS.
	FS FS
}

func (o *Options) defaults() {
	if o.SegmentSize <= 0 {
		o.SegmentSize = 16 << 20
	}
	if o.FS == nil {
		o.FS = OS
	}
}

// Stats are the log's counters since Open.
type Stats struct {
	Appends atomic.Uint64 // groups appended
	Records atomic.Uint64 // records appended
	Bytes   atomic.Uint64 // bytes written: records and segment headers
	Syncs   atomic.Uint64 // fdatasyncs of segments
	// TornBytes are the bytes of a torn tail that Open cut off.
	TornBytes atomic.Uint64
}

// Log is an open commit log.
type Log struct {
	dir  string
	opts Options
	fs   FS

	mu       sync.Mutex
	segs     []segment // the last is active
	active   File      // nil until the first append into a new log
	next     uint64    // seq of the next record
	buf      []byte
	poisoned error
	closed   bool
	stats    Stats
}

// Open opens the log in dir (created if needed) and recovers it: stale
// segments that opts.Checkpoint covers are removed, a segment whose
// creation a crash interrupted is removed, a torn tail is zeroed. Damage
// a crash cannot explain is a *CorruptError and nothing is changed.
func Open(dir string, opts Options) (*Log, error) {
	opts.defaults()
	if err := opts.FS.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	lay, err := inspect(opts.FS, dir, opts.Checkpoint, 0)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, fs: opts.FS, segs: lay.segs, next: opts.Checkpoint + 1}
	removed := lay.stale
	if lay.unborn != "" {
		removed = append(removed, lay.unborn)
	}
	for _, n := range removed {
		if err := l.fs.Remove(filepath.Join(dir, n)); err != nil {
			return nil, fmt.Errorf("commitlog: remove %s: %w", n, err)
		}
	}
	// Synced even when nothing was removed: a segment created before a
	// failed sync and a restart must not lose its entry later.
	if err := l.fs.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("commitlog: sync %s: %w", filepath.Base(dir), err)
	}
	if len(l.segs) == 0 {
		return l, nil
	}
	s := &l.segs[len(l.segs)-1]
	f, err := l.fs.OpenFile(filepath.Join(dir, s.name), os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("commitlog: open %s: %w", s.name, err)
	}
	// The torn group was acknowledged to nobody: zero it, so that nothing
	// of it is found after the records appended from here. And sync what
	// was read: the last group may be one whose fdatasync failed before
	// a restart, read back from the page cache, and records appended
	// after it must not outlive it.
	if s.tail > s.end {
		if _, err := f.WriteAt(make([]byte, s.tail-s.end), s.end); err != nil {
			f.Close()
			return nil, fmt.Errorf("commitlog: cut the torn tail of %s: %w", s.name, err)
		}
		l.stats.TornBytes.Add(uint64(s.tail - s.end))
		s.tail = 0
	}
	if err := f.Datasync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("commitlog: sync %s: %w", s.name, err)
	}
	l.stats.Syncs.Add(1)
	l.active, l.next = f, s.next
	return l, nil
}

// Next is the sequence number the next appended record gets.
func (l *Log) Next() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Stats returns the log's counters.
func (l *Log) Stats() *Stats { return &l.stats }

// Size is the bytes of records the log's segments hold.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segs {
		n += s.end - SegmentHeaderSize
	}
	return n
}

// Append writes payloads as one group of records, numbered from the
// returned first on, with one write and one fdatasync; it returns only
// when they are durable, or with an error and nothing of the group
// acknowledged.
func (l *Log) Append(payloads [][]byte) (first uint64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return 0, ErrClosed
	case l.poisoned != nil:
		return 0, fmt.Errorf("%w: %w", ErrPoisoned, l.poisoned)
	case len(payloads) == 0:
		return l.next, nil
	}
	buf := l.buf[:0]
	for i, p := range payloads {
		if len(p) > MaxRecord {
			return 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(p))
		}
		buf = AppendRecord(buf, l.next+uint64(i), uint32(i), p)
	}
	if cap(buf) <= 1<<20 {
		l.buf = buf
	}
	if err := l.room(int64(len(buf))); err != nil {
		l.poisoned = err
		return 0, err
	}
	if l.active == nil {
		if err := l.roll(int64(len(buf))); err != nil {
			l.poisoned = err
			return 0, err
		}
	}
	s := &l.segs[len(l.segs)-1]
	if _, err := l.active.WriteAt(buf, s.end); err != nil {
		l.poisoned = fmt.Errorf("commitlog: write %s: %w", s.name, err)
		return 0, l.poisoned
	}
	l.stats.Bytes.Add(uint64(len(buf)))
	if err := l.active.Datasync(); err != nil {
		l.poisoned = fmt.Errorf("commitlog: %s: %w: %w", s.name, ErrSync, err)
		return 0, l.poisoned
	}
	l.stats.Syncs.Add(1)
	first = l.next
	n := uint64(len(payloads))
	l.next += n
	s.end += int64(len(buf))
	s.next = l.next
	l.stats.Appends.Add(1)
	l.stats.Records.Add(n)
	return first, nil
}

// room makes sure the active segment has room for need more bytes: a
// new segment when it has records, else (a crash left it short, or the
// group is larger than a segment) the active one grown. A nil active
// segment is left to roll.
func (l *Log) room(need int64) error {
	if l.active == nil {
		return nil
	}
	s := &l.segs[len(l.segs)-1]
	if s.end+need <= s.size {
		return nil
	}
	if s.next != s.first {
		return l.roll(need)
	}
	size := max(l.opts.SegmentSize, SegmentHeaderSize+need)
	if err := l.active.Allocate(size); err != nil {
		return fmt.Errorf("commitlog: allocate %s: %w", s.name, err)
	}
	s.size = size
	return nil
}

// roll starts a new segment with room for need bytes of records: created,
// preallocated, its header written and synced, the directory synced.
func (l *Log) roll(need int64) error {
	size := max(l.opts.SegmentSize, SegmentHeaderSize+need)
	name := segmentName(l.next)
	path := filepath.Join(l.dir, name)
	f, err := l.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("commitlog: create %s: %w", name, err)
	}
	err = f.Allocate(size)
	if err == nil {
		_, err = f.WriteAt(appendSegmentHeader(nil, l.next), 0)
	}
	if err == nil {
		err = f.Datasync()
	}
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("commitlog: create %s: %w", name, err)
	}
	l.stats.Bytes.Add(SegmentHeaderSize)
	l.stats.Syncs.Add(1)
	if l.active != nil {
		l.active.Close()
	}
	l.active = f
	l.segs = append(l.segs, segment{name: name, first: l.next, next: l.next, end: SegmentHeaderSize, size: size})
	return nil
}

// Trim removes the segments whose records are all at or before through
// (made durable elsewhere by a checkpoint), oldest first; the segment
// appended to stays.
func (l *Log) Trim(through uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for n+1 < len(l.segs) && l.segs[n+1].first <= through+1 {
		if err := l.fs.Remove(filepath.Join(l.dir, l.segs[n].name)); err != nil {
			l.segs = l.segs[n:]
			return fmt.Errorf("commitlog: trim %s: %w", l.segs[0].name, err)
		}
		n++
	}
	if n == 0 {
		return nil
	}
	l.segs = l.segs[n:]
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("commitlog: trim: sync %s: %w", filepath.Base(l.dir), err)
	}
	return nil
}

// Replay calls fn, in order, for every record after seq after; the
// payload is valid only during the call.
func (l *Log) Replay(after uint64, fn func(seq uint64, payload []byte) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs {
		if s.next <= after+1 {
			continue
		}
		data, err := readAll(l.fs, filepath.Join(l.dir, s.name))
		if err != nil {
			return fmt.Errorf("commitlog: replay %s: %w", s.name, err)
		}
		if int64(len(data)) < s.end {
			return &CorruptError{Segment: s.name, Offset: int64(len(data)), Reason: "segment shorter than at open"}
		}
		_, end, _, err := scanRecords(data[:s.end], s.first, 0, func(r Record) error {
			if r.Seq <= after {
				return nil
			}
			return fn(r.Seq, r.Payload)
		})
		if err == nil && int64(end) != s.end {
			err = &CorruptError{Segment: s.name, Offset: int64(end), Reason: "records end before where they ended at open"}
		}
		if err != nil {
			return fmt.Errorf("commitlog: replay %s: %w", s.name, err)
		}
	}
	return nil
}

// Close closes the log; it is safe to call more than once.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.active != nil {
		return l.active.Close()
	}
	return nil
}

// Report is what Check found.
type Report struct {
	Segments int
	Records  uint64 // records after the stale segments
	First    uint64 // seq of the first record (0 when none)
	Last     uint64 // seq of the last record (0 when none)
	// TornBytes are the bytes of a torn tail that Open would cut off:
	// a group a crash interrupted, acknowledged to nobody.
	TornBytes int64
	// Stale are the segments the checkpoint covers that Open would
	// remove (a trim a crash interrupted).
	Stale int
}

// Check verifies the log in dir against checkpoint without changing it:
// every record's CRC, the sequence numbers continuous from segment to
// segment, the log reaching the checkpoint and holding every record
// after it. Damage is a *CorruptError naming the segment and offset.
func Check(dir string, checkpoint uint64, fsys FS) (Report, error) {
	return Scan(dir, checkpoint, fsys, nil)
}

// Scan is Check that also calls fn (when not nil), in order, for every
// record after checkpoint, as Replay does after Open, but without
// changing the log: a torn tail is left out, as Open would cut it. The
// payload is valid only during the call.
func Scan(dir string, checkpoint uint64, fsys FS, fn func(seq uint64, payload []byte) error) (Report, error) {
	return ScanUpTo(dir, checkpoint, 0, fsys, fn)
}

// ScanUpTo is Scan of the records up to seq upTo (0: all), for a check of
// a log that is being written: what follows upTo is left out, whole or
// half written.
func ScanUpTo(dir string, checkpoint, upTo uint64, fsys FS, fn func(seq uint64, payload []byte) error) (Report, error) {
	if fsys == nil {
		fsys = OS
	}
	lay, err := inspect(fsys, dir, checkpoint, upTo)
	if err != nil {
		return Report{}, err
	}
	if fn != nil {
		for _, s := range lay.segs {
			if s.next <= checkpoint+1 {
				continue
			}
			data, err := readAll(fsys, filepath.Join(dir, s.name))
			if err != nil {
				return Report{}, fmt.Errorf("commitlog: read %s: %w", s.name, err)
			}
			if int64(len(data)) < s.end {
				return Report{}, &CorruptError{Segment: s.name, Offset: int64(len(data)), Reason: "segment shorter than when it was scanned"}
			}
			_, _, _, err = scanRecords(data[:s.end], s.first, upTo, func(r Record) error {
				if r.Seq <= checkpoint {
					return nil
				}
				return fn(r.Seq, r.Payload)
			})
			if err != nil {
				return Report{}, fmt.Errorf("commitlog: scan %s: %w", s.name, err)
			}
		}
	}
	r := Report{Segments: len(lay.segs), Records: lay.records, Stale: len(lay.stale)}
	if len(lay.segs) > 0 && lay.records > 0 {
		r.First = lay.segs[0].first
		r.Last = lay.segs[len(lay.segs)-1].next - 1
	}
	for _, s := range lay.segs {
		if s.tail > s.end {
			r.TornBytes += s.tail - s.end
		}
	}
	return r, nil
}
