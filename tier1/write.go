package tier1

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Writes. A batch is decoded when it arrives (Prepare) and stored later
// (Store), together with the other batches that arrived meanwhile: one
// store write, one transaction, one fsync shared with whatever else the
// store's writer groups, one block per device over all of them. A sender
// that pipelines many small batches (one frame each, say) so pays the
// store's per-write costs once per group, not once per batch. The
// acknowledgement of every batch still waits for the commit that holds it.

// The in-flight budget counts a batch at what it holds decoded (measured
// in cost_internal_test.go): a Pending (pendingCost, the frame and values
// of a one-frame batch inline), the frames and values of a larger batch,
// the strings copied out of the body (at most the body's size, and their
// allocations round that up) and, for
// a batch of ownBlocks frames or more, the blocks Prepare encodes (in one
// allocation of their size, at most about the body's, and a little per
// frame). Before the decode it is charged an estimate,
// bodyFactor times its size; the charge is set right once it is decoded.
const (
	pendingCost = 512
	bodyFactor  = 5
	frameCost   = int64(unsafe.Sizeof(Frame(nil)))
	valueCost   = int64(unsafe.Sizeof(Value{}))
)

// decodedCost is what batch b, decoded from a body of n bytes, holds.
func decodedCost(b *Batch, n int) int64 {
	c := int64(pendingCost + n + n/2) // a string takes a little more than its bytes
	if f := len(b.Frames); f > 1 {
		c += int64(f) * (frameCost + valueCost*int64(len(b.Desc.Fields)) + 16) // 16: the allocations' rounding
	}
	if f := len(b.Frames); f >= ownBlocks {
		c += int64(n) + 16*int64(f)
	}
	return c
}

// Pending is a batch decoded by Prepare and waiting for Store. Once Store's
// done runs, Result and Err are its outcome. A Pending added to a Stream
// is the stream's: it is recycled once answered.
type Pending struct {
	Result Result
	Err    error

	b     *Batch // &batch
	batch Batch
	// the frame and values of a small batch, in the same allocation
	frame [1]Frame
	vals  [8]Value
	scope string
	size  int64   // bytes held in the in-flight budget
	bytes int     // of the encoded batch
	at    int64   // arrival, unix ns
	dup   bool    // found in the batch-id table by the last run of the write
	room  bool    // holds a reservation of the disk budget (disk.go)
	own   []block // of a large batch (ownBlocks), built by Prepare
	// text is the copy of a small body that the batch's strings share,
	// kept when the Pending is recycled (see text).
	text []byte
}

// pendingText is the largest body whose copy a Pending keeps for its next
// batch: one-frame batches and small groups of frames.
const pendingText = 1 << 10

// textOf returns body as a string that the batch's strings may share:
// for a small body, a copy in p.text, whose bytes stay unchanged until p
// is recycled; else a string of its own.
func (p *Pending) textOf(body []byte) string {
	if len(body) > pendingText || len(body) == 0 {
		return string(body)
	}
	if cap(p.text) < len(body) {
		p.text = make([]byte, 0, len(body)+len(body)/8) // room for the next, a little longer
	}
	p.text = append(p.text[:0], body...)
	return unsafe.String(unsafe.SliceData(p.text), len(p.text))
}

// pendings recycles Pendings: a Stream hands back each of its batches
// once it is answered (Pump), so that a sender of one-frame batches does
// not cost the garbage collector a Pending each. The Pendings of Ingest
// and IngestAsync, whose outcome their caller may keep, are not recycled.
var pendings = sync.Pool{New: func() any { return new(Pending) }}

// recycle hands p back to pendings, cleared but for its text buffer;
// nothing may use p after, nor a string of its batch or its Result: the
// next batch of p overwrites them. So a Pending is recycled only by a
// Stream, whose answers do not outlive the call that writes them, and not
// after a refusal, whose error may quote the batch (its batch_id).
func (p *Pending) recycle() {
	text := p.text[:0]
	*p = Pending{text: text}
	pendings.Put(p)
}

// Prepare takes room for body in the in-flight budget (waiting while there
// is none), decodes it for scope (the sender's identity, for batch_id
// deduplication) and returns it ready for Store. wantID, if not empty, is
// the routine the batch must be for. An error is the refusal to send the
// sender; nothing is held then.
func (in *Ingestor) Prepare(ctx context.Context, scope, wantID string, body []byte) (*Pending, error) {
	n := max(int64(len(body))*bodyFactor, pendingCost)
	if err := in.budget.acquire(ctx, n); err != nil {
		return nil, err
	}
	p := pendings.Get().(*Pending)
	p.scope, p.size, p.bytes = scope, n, len(body)
	b := &p.batch
	err := decodeBatch(body, p.textOf(body), in.reg, in.cfg.Limits, b, p.frame[:], p.vals[:])
	if err == nil && wantID != "" && b.CapabilityID != wantID {
		err = wire.Errorf(wire.CodeInvalidParams, "the batch is for routine %q but was sent to %q", b.CapabilityID, wantID).
			With("capability_id", b.CapabilityID)
	}
	if err == nil {
		if c := decodedCost(b, len(body)); c != n {
			if err = in.budget.resize(ctx, n, c); err == nil {
				p.size = c
			}
		}
	}
	if err == nil && in.disk != nil {
		p.room, err = in.disk.admit(b.CapabilityID, b.BatchID, int64(len(body)))
	}
	if err != nil {
		in.budget.release(p.size)
		in.C.Refused.Add(1)
		return nil, refusal(err)
	}
	p.b = b
	if len(b.Frames) >= ownBlocks {
		p.at = in.cfg.Now().UnixNano()
		p.own = in.blocksOf(b.Desc, in.appendBlockFrames(make([]blockFrame, 0, len(b.Frames)), b.Desc, p), len(body))
	}
	return p, nil
}

// Store stores the batches of ps (each from Prepare, each stored once) in
// one store write and calls done once the write is durable or failed, with
// every Pending's Result and Err set. A batch whose batch_id its scope sent
// before is acknowledged as a duplicate and not stored again. done runs on
// the store's writer goroutine and must not block; ps must not change
// until it runs. Store blocks only while the store's queue is full.
func (in *Ingestor) Store(ps []*Pending, done func()) {
	if len(ps) == 0 {
		done()
		return
	}
	// The time of arrival of small batches is the time they are stored
	// (one clock reading for the write).
	now := in.cfg.Now().UnixNano()
	for _, p := range ps {
		if p.at == 0 {
			p.at = now
		}
	}
	w := &write{in: in, ps: ps}
	w.plan()
	in.db.UpdateAsync(w.apply, func(err error) {
		w.finish(err)
		done()
	})
}

// write is one Store: its batches by routine, and the blocks to put.
type write struct {
	in       *Ingestor
	ps       []*Pending
	routines []routineWrite
	room     room // what the disk budget found and dropped (disk.go)
}

// routineWrite is what one write stores of one routine.
type routineWrite struct {
	d  *Descriptor
	ps []*Pending
	// blocks hold the frames of ps; stored, those of the last run of
	// apply (without the duplicates it found).
	blocks, stored []block
}

// plan groups the batches by routine (in arrival order) and builds their
// blocks, expecting no duplicates: apply builds them again in the rare
// write that has one.
func (w *write) plan() {
	d0 := w.ps[0].b.Desc
	same := true
	for _, p := range w.ps[1:] {
		same = same && p.b.Desc == d0
	}
	if same {
		w.routines = []routineWrite{{d: d0, ps: w.ps}}
	} else {
		for _, p := range w.ps {
			i := slices.IndexFunc(w.routines, func(r routineWrite) bool { return r.d == p.b.Desc })
			if i < 0 {
				w.routines = append(w.routines, routineWrite{d: p.b.Desc})
				i = len(w.routines) - 1
			}
			w.routines[i].ps = append(w.routines[i].ps, p)
		}
	}
	for i := range w.routines {
		r := &w.routines[i]
		r.blocks = w.in.blocks(r.d, r.ps)
	}
}

// apply is the store write. The store may run it more than once (when
// another write of its transaction fails), so it keeps nothing of a run
// but in the Pendings' dup flags and the routines' stored blocks.
func (w *write) apply(tx *store.Tx) error {
	var seen *dedup
	dups := false
	for _, p := range w.ps {
		p.dup = false
		if p.b.BatchID == "" {
			continue
		}
		if seen == nil {
			var err error
			if seen, err = openDedup(tx); err != nil {
				return err
			}
		}
		dup, err := seen.seen(p.scope, p.b.BatchID, p.at)
		if err != nil {
			return err
		}
		p.dup = dup
		dups = dups || dup
	}
	if seen != nil {
		if err := seen.flush(); err != nil {
			return err
		}
	}
	for i := range w.routines {
		r := &w.routines[i]
		r.stored = r.blocks
		if dups {
			r.stored = w.in.blocks(r.d, r.ps)
		}
		if err := w.put(tx, r); err != nil {
			return err
		}
	}
	return w.makeRoom(tx)
}

// put stores the blocks of one routine, and queues its new batches for the
// uplink.
func (w *write) put(tx *store.Tx, r *routineWrite) error {
	fw, err := openFrames(tx, r.d.CapabilityID)
	if err != nil {
		return err
	}
	// the write transaction keeps every key until the commit: one array for all of them.
	size := 0
	for i := range r.stored {
		size += len(r.stored[i].dev) + 17
	}
	keys := make([]byte, 0, size)
	for i := range r.stored {
		blk := &r.stored[i]
		seq, err := fw.nextSeq()
		if err != nil {
			return err
		}
		off := len(keys)
		keys = FrameKey(keys, blk.ts, blk.dev, seq)
		if err := fw.put(keys[off:len(keys):len(keys)], blk.data, blk.n); err != nil {
			return err
		}
	}
	if w.in.outbox.Load() {
		if err := enqueueUplink(tx, r, w.in.cfg.Now().UnixNano()); err != nil {
			return err
		}
	}
	return fw.done()
}

// Upstream, the new batches of a write go in order as few batches: those
// that arrived together are forwarded together, up to uplinkMergeBytes
// and uplinkMergeFrames a batch, so a sender of one-frame batches does not
// cost the uplink one request per frame. A batch larger than that goes as
// it came.
const (
	uplinkMergeBytes  = 256 << 10
	uplinkMergeFrames = 4096
)

// enqueueUplink queues the new batches of r in the export log (outbox.go)
// at time at.
func enqueueUplink(tx *store.Tx, r *routineWrite, at int64) error {
	var frames []Frame
	bytes := 0
	cumF, cumB, _ := OutboxTotals(tx)
	flush := func() error {
		if len(frames) == 0 {
			return nil
		}
		d := r.d
		seq, err := EnqueueOutbox(tx, func(seq uint64) []byte {
			e := OutboxEntry{Frames: uint32(len(frames)), CumFrames: cumF, CumBytes: cumB, At: at}
			b := AppendBatch(make([]byte, OutboxHeaderLen, OutboxHeaderLen+bytes+64), d.CapabilityID, d.Version, fmt.Sprintf("u%d", seq), frames, d)
			cumF, cumB = cumF+uint64(len(frames)), cumB+uint64(len(b)-OutboxHeaderLen)
			AppendOutboxHeader(b[:0], e) // in place
			return b
		})
		frames, bytes = frames[:0], 0
		if err != nil {
			return err
		}
		return PutOutboxTotals(tx, cumF, cumB, seq+1)
	}
	for _, p := range r.ps {
		if p.dup {
			continue
		}
		if bytes+p.bytes > uplinkMergeBytes || len(frames)+len(p.b.Frames) > uplinkMergeFrames {
			if err := flush(); err != nil {
				return err
			}
		}
		frames = append(frames, p.b.Frames...)
		bytes += p.bytes
	}
	return flush()
}

// finish sets the outcome of every batch once the write is durable (err
// nil) or failed, and tells the watchers and the uplink.
func (w *write) finish(err error) {
	in := w.in
	var bytes int64
	for _, p := range w.ps {
		bytes += p.size
	}
	in.budget.release(bytes)
	w.committed(err)
	if err != nil {
		werr := wire.Errorf(wire.CodeSysStorage, "store batch: %v", err)
		if errors.Is(err, store.ErrOutcomeUnknown) {
			// The batch may be in the file: "not stored" would be a lie,
			// and its batch_id makes the resend safe.
			werr = wire.Errorf(wire.CodeCommitUnknown, "the disk failed while storing the batch, which may or may not be stored (%v): send it again with the same batch_id, which stores it once", err)
		}
		for _, p := range w.ps {
			p.Result, p.Err = Result{BatchID: p.b.BatchID}, werr
		}
		in.C.Refused.Add(uint64(len(w.ps)))
		return
	}
	stored := false
	for _, p := range w.ps {
		p.Result = Result{Accepted: len(p.b.Frames), BatchID: p.b.BatchID, Duplicate: p.dup}
		if p.dup {
			in.C.Duplicates.Add(1)
			continue
		}
		stored = true
		in.C.Frames.Add(uint64(len(p.b.Frames)))
		in.C.Bytes.Add(uint64(p.bytes))
	}
	in.C.Batches.Add(uint64(len(w.ps)))
	if !stored {
		return
	}
	for i := range w.routines {
		if r := &w.routines[i]; len(r.stored) > 0 {
			in.publish(r.d, r.stored)
		}
	}
	if in.cfg.Uplink {
		select {
		case in.queued <- struct{}{}:
		default:
		}
	}
}

// block is one stored record: frames of one device, in time order.
type block struct {
	ts   int64 // of the first frame
	dev  string
	n    int
	data []byte
}

// blockFrame is a frame with the ts and device that place it.
type blockFrame struct {
	ts  int64
	dev string
	f   Frame
}

// ownBlocks is the size from which a batch gets blocks of its own, built
// by Prepare as it arrives, rather than sharing blocks with the batches
// stored with it: the work is done while the writes before it are on
// their way to the disk, and a batch that large fills its blocks alone.
const ownBlocks = 64

// blocks returns the blocks of the batches of ps (all of routine d) that
// are not duplicates: the blocks of their own of large batches, after the
// frames of the small ones grouped together (blocksOf).
func (in *Ingestor) blocks(d *Descriptor, ps []*Pending) []block {
	var out []block
	n, size := 0, 0
	for _, p := range ps {
		if p.dup {
			continue
		}
		if p.own != nil {
			out = append(out, p.own...)
			continue
		}
		n += len(p.b.Frames)
		size += p.bytes
	}
	if n == 0 {
		return out
	}
	scratch, _ := blockFrames.Get().(*[]blockFrame)
	if scratch == nil {
		scratch = new([]blockFrame)
	}
	fs := *scratch
	if cap(fs) < n {
		fs = make([]blockFrame, 0, n)
	}
	for _, p := range ps {
		if !p.dup && p.own == nil {
			fs = in.appendBlockFrames(fs, d, p)
		}
	}
	out = append(in.blocksOf(d, fs, size), out...)
	// blocksOf keeps nothing of fs: its blocks hold copies of the frames
	// (encoded) and of the devices' string headers.
	if cap(fs) <= maxBlockFramesKept {
		clear(fs) // holds no batch's strings while pooled
		*scratch = fs[:0]
		blockFrames.Put(scratch)
	}
	return out
}

// blockFrames recycles the frames with their places that blocks gathers
// for blocksOf, up to maxBlockFramesKept of them (a write of that many
// one-frame batches, about 200 KiB).
var blockFrames sync.Pool

const maxBlockFramesKept = 4096

// appendBlockFrames appends the frames of p with the ts and device that
// place them: the ts field when the routine has one, else the time the
// batch arrived; the device_id field, else the sender's scope.
func (in *Ingestor) appendBlockFrames(fs []blockFrame, d *Descriptor, p *Pending) []blockFrame {
	kf := in.keys[d.CapabilityID]
	for _, f := range p.b.Frames {
		bf := blockFrame{ts: p.at, dev: p.scope, f: f}
		if kf.ts >= 0 {
			if v := f.At(kf.ts); v.Kind() == KindInt {
				bf.ts = v.Int()
			}
		}
		if kf.device >= 0 {
			if v := f.At(kf.device); v.Kind() == KindStr {
				bf.dev = v.Str()
			}
		}
		fs = append(fs, bf)
	}
	return fs
}

// blocksOf groups frames of routine d into blocks (see block.go): by
// device, in time order, at most BlockSpan of ts and MaxBlockFrames frames
// each; a block of more than MaxBlockBytes and less than uncutBlockBytes
// is cut into about equal ones of at most MaxBlockBytes. size is the encoded size of their batches, which holds every frame
// once: the blocks take about as much, usually less.
func (in *Ingestor) blocksOf(d *Descriptor, fs []blockFrame, size int) []block {
	fs = byDevice(fs)
	n := len(fs)
	var out []block
	sc := blockScratches.Get().(*blockScratch)
	run, buf, ends := sc.run[:0], sc.buf[:0], sc.ends[:0]
	if cap(buf) < size+n+16 {
		buf = make([]byte, 0, size+n+16)
	}
	// part is the frames of each block of the run being cut, which ends
	// at cutEnd: the run is encoded whole once, to learn its size, and
	// each of its blocks once.
	part, cutEnd := 0, 0
	for start := 0; start < n; {
		first := &fs[start]
		end := start + 1
		if start < cutEnd {
			end = min(start+part, cutEnd)
		} else {
			for end < n && end-start < MaxBlockFrames && fs[end].dev == first.dev && fs[end].ts-first.ts < BlockSpan {
				end++
			}
		}
		run = run[:0]
		for i := start; i < end; i++ {
			run = append(run, fs[i].f)
		}
		off := len(buf)
		buf = AppendBlock(buf, run, len(d.Fields))
		if sz := len(buf) - off; start >= cutEnd && sz > MaxBlockBytes && sz < uncutBlockBytes && end-start > 1 {
			// Cut the run into about equal blocks that fit, and encode
			// the first of them.
			k := (sz + MaxBlockBytes - 1) / MaxBlockBytes
			part, cutEnd = (end-start+k-1)/k, end
			end = start + part
			run = run[:end-start]
			buf = AppendBlock(buf[:off], run, len(d.Fields))
		}
		out = append(out, block{ts: first.ts, dev: first.dev, n: end - start})
		ends = append(ends, len(buf))
		start = end
	}
	// The blocks in one allocation of their size (a third or less of
	// the batches' for telemetry): the scratch is the next write's.
	data := make([]byte, len(buf))
	copy(data, buf)
	off := 0
	for i, end := range ends {
		out[i].data = data[off:end:end]
		off = end
	}
	if cap(buf) <= maxBlockScratchKept {
		clear(run[:cap(run)]) // holds no batch's frames while pooled
		sc.run, sc.buf, sc.ends = run[:0], buf[:0], ends[:0]
		blockScratches.Put(sc)
	}
	return out
}

// blockScratch is what blocksOf encodes into, kept between writes (in
// blockScratches) up to maxBlockScratchKept bytes of blocks.
type blockScratch struct {
	run  []Frame
	buf  []byte
	ends []int
}

var blockScratches = sync.Pool{New: func() any { return new(blockScratch) }}

const maxBlockScratchKept = 1 << 20

// byDevice returns fs ordered by device, then ts, then arrival: fs itself
// when it is in that order already, else a copy. Frames usually come
// round-robin from a few devices, each in time order: they are dealt into
// one run per device (no comparison sort over them all), and only a run
// out of time order is sorted.
func byDevice(fs []blockFrame) []blockFrame {
	sorted := true
	for i := 1; i < len(fs) && sorted; i++ {
		sorted = fs[i].dev > fs[i-1].dev || fs[i].dev == fs[i-1].dev && fs[i].ts >= fs[i-1].ts
	}
	if sorted {
		return fs
	}
	// The device of each frame, numbered in order of first appearance.
	var devs []string
	var index map[string]int32 // once there are many devices
	dev := make([]int32, len(fs))
	last := int32(0)
	for i := range fs {
		d := fs[i].dev
		switch {
		case len(devs) > 0 && devs[last] == d:
		case len(devs) > 0 && devs[(int(last)+1)%len(devs)] == d:
			last = int32((int(last) + 1) % len(devs))
		default:
			found := false
			if index != nil {
				last, found = index[d]
			} else {
				for j, x := range devs {
					if x == d {
						last, found = int32(j), true
						break
					}
				}
			}
			if !found {
				last = int32(len(devs))
				devs = append(devs, d)
				if index != nil {
					index[d] = last
				} else if len(devs) > 32 {
					index = make(map[string]int32, 2*len(devs))
					for j, x := range devs {
						index[x] = int32(j)
					}
				}
			}
		}
		dev[i] = last
	}
	// Where each device's run starts, the devices in name order.
	names := make([]int32, len(devs))
	for i := range names {
		names[i] = int32(i)
	}
	slices.SortFunc(names, func(a, b int32) int { return strings.Compare(devs[a], devs[b]) })
	start := make([]int, len(devs))
	for _, g := range dev {
		start[g]++
	}
	off := 0
	for _, g := range names {
		off, start[g] = off+start[g], off
	}
	end := slices.Clone(start)
	out := make([]blockFrame, len(fs))
	for i, g := range dev {
		out[end[g]] = fs[i]
		end[g]++
	}
	for g := range devs {
		run := out[start[g]:end[g]]
		if !slices.IsSortedFunc(run, func(x, y blockFrame) int { return cmp.Compare(x.ts, y.ts) }) {
			slices.SortStableFunc(run, func(x, y blockFrame) int { return cmp.Compare(x.ts, y.ts) })
		}
	}
	return out
}
