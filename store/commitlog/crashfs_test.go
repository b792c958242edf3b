package commitlog_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/synapse-edge/synapse/store/commitlog"
)

// crashFS is the power-loss seam: a commitlog.FS over real files that
// records every write, allocation, fdatasync, creation and removal, so a
// test can build, for any point of the trace, the files a power cut there
// would leave: each file as of its last completed fdatasync, plus a torn
// part of what came after (image).
type crashFS struct {
	mu    sync.Mutex
	ops   []op
	fail  func(op) bool // when set and true, the operation fails instead
	inner commitlog.FS
}

type opKind int

const (
	opCreate opKind = iota
	opWrite
	opAlloc
	opSync
	opRemove
	opSyncDir
)

type op struct {
	kind opKind
	name string // base name
	off  int64
	data []byte
	size int64
}

func newCrashFS() *crashFS { return &crashFS{inner: commitlog.OS} }

// Len is the number of operations recorded so far: a crash point.
func (c *crashFS) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ops)
}

func (c *crashFS) record(o op) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil && c.fail(o) {
		return os.ErrInvalid
	}
	c.ops = append(c.ops, o)
	return nil
}

func (c *crashFS) OpenFile(name string, flag int, perm os.FileMode) (commitlog.File, error) {
	f, err := c.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		if err := c.record(op{kind: opCreate, name: filepath.Base(name)}); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &crashFile{File: f, fs: c, name: filepath.Base(name)}, nil
}

func (c *crashFS) Remove(name string) error {
	if err := c.inner.Remove(name); err != nil {
		return err
	}
	return c.record(op{kind: opRemove, name: filepath.Base(name)})
}

func (c *crashFS) List(dir string) ([]string, error) { return c.inner.List(dir) }
func (c *crashFS) MkdirAll(dir string) error         { return c.inner.MkdirAll(dir) }
func (c *crashFS) SyncDir(dir string) error {
	if err := c.record(op{kind: opSyncDir}); err != nil {
		return err
	}
	return c.inner.SyncDir(dir)
}

type crashFile struct {
	commitlog.File
	fs   *crashFS
	name string
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.record(op{kind: opWrite, name: f.name, off: off, data: append([]byte(nil), p...)}); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *crashFile) Allocate(size int64) error {
	if err := f.fs.record(op{kind: opAlloc, name: f.name, size: size}); err != nil {
		return err
	}
	return f.File.Allocate(size)
}

func (f *crashFile) Datasync() error {
	if err := f.fs.record(op{kind: opSync, name: f.name}); err != nil {
		return err
	}
	return f.File.Datasync()
}

// image writes into dir the files a power cut after the first n
// operations would leave. A file's creation or removal counts once a
// directory sync followed it, else it may or may not have happened. A
// file holds what its completed fdatasyncs covered; of the writes after
// its last one, every one is dropped but the last, which is torn at a
// 512-byte boundary of the file (0 to all of its bytes kept). With
// scramble, each 512-byte sector of every unsynced write is kept or
// dropped at random instead: a disk reorders what it was not told to
// order.
func (c *crashFS) image(t *testing.T, dir string, n int, rng *rand.Rand, scramble bool) {
	t.Helper()
	c.mu.Lock()
	ops := c.ops[:n]
	c.mu.Unlock()
	type file struct {
		exists, durable bool // exists: as the process saw it; durable: dir-synced state
		data            []byte
		size, synced    int64 // allocated size; size made durable
		pending         []op
	}
	files := map[string]*file{}
	get := func(name string) *file {
		if files[name] == nil {
			files[name] = &file{}
		}
		return files[name]
	}
	var dirPending []op
	apply := func(f *file, o op) {
		if end := o.off + int64(len(o.data)); end > int64(len(f.data)) {
			f.data = append(f.data, make([]byte, end-int64(len(f.data)))...)
		}
		copy(f.data[o.off:], o.data)
	}
	for _, o := range ops {
		switch o.kind {
		case opCreate:
			get(o.name).exists = true
			*files[o.name] = file{exists: true, durable: files[o.name].durable}
			dirPending = append(dirPending, o)
		case opRemove:
			get(o.name).exists = false
			dirPending = append(dirPending, o)
		case opSyncDir:
			for _, p := range dirPending {
				files[p.name].durable = p.kind == opCreate
			}
			dirPending = nil
		case opAlloc:
			get(o.name).size = max(get(o.name).size, o.size)
		case opWrite:
			get(o.name).pending = append(get(o.name).pending, o)
		case opSync:
			f := get(o.name)
			for _, p := range f.pending {
				apply(f, p)
			}
			f.pending, f.synced = nil, f.size
		}
	}
	// Entries not dir-synced: each may or may not have reached the disk.
	for _, p := range dirPending {
		if rng.IntN(2) == 0 {
			files[p.name].durable = p.kind == opCreate
		}
	}
	for name, f := range files {
		if !f.durable {
			continue
		}
		data := append([]byte(nil), f.data...)
		put := func(o op, from, to int64) {
			if to > int64(len(data)) {
				data = append(data, make([]byte, to-int64(len(data)))...)
			}
			copy(data[from:to], o.data[from-o.off:to-o.off])
		}
		if len(f.pending) > 0 {
			if scramble {
				for _, o := range f.pending {
					for s := o.off &^ 511; s < o.off+int64(len(o.data)); s += 512 {
						if rng.IntN(2) == 0 {
							put(o, max(s, o.off), min(s+512, o.off+int64(len(o.data))))
						}
					}
				}
			} else {
				o := f.pending[len(f.pending)-1]
				end := o.off + int64(len(o.data))
				cuts := []int64{o.off}
				for s := (o.off + 511) &^ 511; s < end; s += 512 {
					cuts = append(cuts, s)
				}
				cuts = append(cuts, end)
				if cut := cuts[rng.IntN(len(cuts))]; cut > o.off {
					put(o, o.off, cut)
				}
			}
		}
		if int64(len(data)) < f.synced {
			data = append(data, make([]byte, f.synced-int64(len(data)))...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
