// Package crashfs is the power-loss seam of the commit log's tests (and
// the store's): a commitlog.FS over real files that records every write,
// allocation, fdatasync, creation and removal, and builds, for any point
// of the trace, the files a power cut there would leave.
package crashfs

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/synapse-edge/synapse/store/commitlog"
)

// FS is the power-loss seam: a commitlog.FS over real files that
// records every write, allocation, fdatasync, creation and removal, so a
// test can build, for any point of the trace, the files a power cut there
// would leave: each file as of its last completed fdatasync, plus a torn
// part of what came after (Image).
type FS struct {
	mu    sync.Mutex
	ops   []Op
	fail  func(Op) bool // when set and true, the operation fails instead
	inner commitlog.FS
}

// SetFail makes the operations fail for which fail is true (nil: none).
func (c *FS) SetFail(fail func(Op) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = fail
}

// Kind is what an operation did.
type Kind int

// The operations recorded.
const (
	Create Kind = iota
	Write
	Alloc
	Sync
	Remove
	SyncDir
)

// Op is one recorded operation.
type Op struct {
	Kind Kind
	name string // base name
	off  int64
	data []byte
	size int64
}

// New returns an FS over the operating system's.
func New() *FS { return &FS{inner: commitlog.OS} }

// Len is the number of operations recorded so far: a crash point.
func (c *FS) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ops)
}

func (c *FS) record(o Op) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil && c.fail(o) {
		return os.ErrInvalid
	}
	c.ops = append(c.ops, o)
	return nil
}

func (c *FS) OpenFile(name string, flag int, perm os.FileMode) (commitlog.File, error) {
	f, err := c.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		if err := c.record(Op{Kind: Create, name: filepath.Base(name)}); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &crashFile{File: f, fs: c, name: filepath.Base(name)}, nil
}

func (c *FS) Remove(name string) error {
	if err := c.inner.Remove(name); err != nil {
		return err
	}
	return c.record(Op{Kind: Remove, name: filepath.Base(name)})
}

func (c *FS) List(dir string) ([]string, error) { return c.inner.List(dir) }
func (c *FS) MkdirAll(dir string) error         { return c.inner.MkdirAll(dir) }
func (c *FS) SyncDir(dir string) error {
	if err := c.record(Op{Kind: SyncDir}); err != nil {
		return err
	}
	return c.inner.SyncDir(dir)
}

type crashFile struct {
	commitlog.File
	fs   *FS
	name string
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.record(Op{Kind: Write, name: f.name, off: off, data: append([]byte(nil), p...)}); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *crashFile) Allocate(size int64) error {
	if err := f.fs.record(Op{Kind: Alloc, name: f.name, size: size}); err != nil {
		return err
	}
	return f.File.Allocate(size)
}

func (f *crashFile) Datasync() error {
	if err := f.fs.record(Op{Kind: Sync, name: f.name}); err != nil {
		return err
	}
	return f.File.Datasync()
}

// Image writes into dir the files a power cut after the first n
// operations would leave. A file's creation or removal counts once a
// directory sync followed it, else it may or may not have happened. A
// file holds what its completed fdatasyncs covered; of the writes after
// its last one, every one is dropped but the last, which is torn at a
// 512-byte boundary of the file (0 to all of its bytes kept). With
// scramble, each 512-byte sector of every unsynced write is kept or
// dropped at random instead: a disk reorders what it was not told to
// order.
func (c *FS) Image(t *testing.T, dir string, n int, rng *rand.Rand, scramble bool) {
	t.Helper()
	c.mu.Lock()
	ops := c.ops[:n]
	c.mu.Unlock()
	type file struct {
		exists, durable bool // exists: as the process saw it; durable: dir-synced state
		data            []byte
		size, synced    int64 // allocated size; size made durable
		pending         []Op
	}
	files := map[string]*file{}
	get := func(name string) *file {
		if files[name] == nil {
			files[name] = &file{}
		}
		return files[name]
	}
	var dirPending []Op
	apply := func(f *file, o Op) {
		if end := o.off + int64(len(o.data)); end > int64(len(f.data)) {
			f.data = append(f.data, make([]byte, end-int64(len(f.data)))...)
		}
		copy(f.data[o.off:], o.data)
	}
	for _, o := range ops {
		switch o.Kind {
		case Create:
			get(o.name).exists = true
			*files[o.name] = file{exists: true, durable: files[o.name].durable}
			dirPending = append(dirPending, o)
		case Remove:
			get(o.name).exists = false
			dirPending = append(dirPending, o)
		case SyncDir:
			for _, p := range dirPending {
				files[p.name].durable = p.Kind == Create
			}
			dirPending = nil
		case Alloc:
			get(o.name).size = max(get(o.name).size, o.size)
		case Write:
			get(o.name).pending = append(get(o.name).pending, o)
		case Sync:
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
			files[p.name].durable = p.Kind == Create
		}
	}
	for name, f := range files {
		if !f.durable {
			continue
		}
		data := append([]byte(nil), f.data...)
		put := func(o Op, from, to int64) {
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
