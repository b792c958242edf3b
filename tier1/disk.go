package tier1

import (
	"encoding/binary"
	"log/slog"
	"math"
	"math/bits"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Disk budget. The limits on stored tier-1 data, and how they combine:
//
//   - a routine's byte limit is its tier1.quotas entry's max_bytes, else
//     max_bytes_per_routine; its overflow policy is the entry's overflow,
//     else drop_oldest;
//   - max_disk_bytes bounds all routines together;
//   - min_free_bytes is a floor of free space on the data file's
//     filesystem (statfs, read at most once a second and at each sweep):
//     below it the budget becomes the bytes stored when the floor was
//     crossed, so tier-1 data stops growing until space comes back;
//   - retention_hours drops frames older than that in every routine,
//     whatever its policy.
//
// A drop_oldest routine always stores what it is sent: the write that
// takes it over its limit, or takes all routines over the budget, drops in
// the same transaction the oldest blocks of the routine (its own limit) or
// of the drop_oldest routines, oldest first (the budget). A reject_new
// routine refuses, before anything is stored, a batch that would take it
// over its limit or all routines over the budget (counting the batches
// admitted and not yet stored by their encoded size): the sender gets
// storage_quota_exceeded (507, retriable) and nothing is dropped. Its
// frames are only ever dropped by age; if the reject_new routines alone
// fill the budget, the drop_oldest ones keep only their newest writes.
//
// Every frame dropped is counted per routine in the store, in the
// transaction that drops it (meta key "t1_dropped/<capability_id>"), so
// the counts survive a restart and a power loss exactly; the first drop of
// a routine and each count that reaches a power of two are logged.
// Refusals are counted since start only (a refusal stores nothing).

// Reasons a frame is dropped, in logs and counters.
const (
	dropAge    = "retention_hours"
	dropQuota  = "max_bytes"
	dropBudget = "max_disk_bytes"
	dropFloor  = "min_free_bytes"
)

// statfsEvery is how often the free space is read at ingest.
const statfsEvery = time.Second

// roomBlocks bounds the blocks one ingest write drops to make room; the
// sweep (Prune) drops the rest of a larger excess.
const roomBlocks = 256

// routineDisk is the budget state of one routine.
type routineDisk struct {
	id string
	// size is the routine's stored bytes as of the last commit seen;
	// reserved the encoded bytes of its batches admitted and not stored.
	size, reserved atomic.Int64
	// dropped is the durable count of frames dropped (see above);
	// refused counts the batches refused by the quota since start. Both
	// are the counters of /metrics when UseDisk had a registry.
	dropped, refused *atomic.Uint64
}

// DiskStatus is the disk-budget state of one routine.
type DiskStatus struct {
	MaxBytes       int64
	Overflow       string
	DroppedFrames  uint64
	RefusedBatches uint64
}

// disk is the Ingestor's disk budget (see above).
type disk struct {
	// routines are those of the registry and the store at UseDisk, read
	// without a lock; extra, under mu, any other a caller names.
	routines map[string]*routineDisk
	mu       sync.Mutex
	extra    map[string]*routineDisk
	conf     func() *Config // the tier1 section in force (reloads change it)
	dir      string
	now      func() time.Time
	log      *slog.Logger
	freeFn   func(dir string) (uint64, error)
	// the /metrics families of dropped and refused, if any
	drops, refusals *metrics.CounterVec

	total, reserved atomic.Int64
	// floorCap is the budget while the free space is below the floor (0
	// when it is not); free the last reading, statAt its time.
	floorCap, free, statAt atomic.Int64
	statMu                 sync.Mutex
	statFailed             bool // under statMu
}

// UseDisk sets the disk budget of the tier1 section conf returns, read
// each time it is needed (quotas, max_bytes_per_routine, max_disk_bytes,
// min_free_bytes; the data file is at dbPath), and reads the stored totals
// and drop counts. Call it once, before the first batch. log gets the drop
// and floor lines; reg, if not nil, the per-routine counters and the
// budget's gauges.
func (in *Ingestor) UseDisk(conf func() *Config, dbPath string, log *slog.Logger, reg *metrics.Registry) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &disk{routines: map[string]*routineDisk{}, extra: map[string]*routineDisk{}, conf: conf, dir: filepath.Dir(dbPath), now: in.cfg.Now, log: log, freeFn: freeBytes}
	if reg != nil {
		d.drops = reg.CounterVec("synapse_tier1_dropped_frames_total",
			"Tier-1 frames dropped (retention_hours, max_bytes, max_disk_bytes, min_free_bytes) since the store began, by routine.", "routine")
		d.refusals = reg.CounterVec("synapse_tier1_quota_refused_batches_total",
			"Tier-1 batches refused storage_quota_exceeded (reject_new routines) since start, by routine.", "routine")
		reg.GaugeFunc("synapse_tier1_stored_bytes", "Bytes of all routines' stored tier-1 frames.", func() float64 { return float64(d.total.Load()) })
		reg.GaugeFunc("synapse_tier1_disk_budget_bytes", "The bound on all tier-1 data now: max_disk_bytes, or less below min_free_bytes; 0 when none.",
			func() float64 { return float64(d.budget()) })
		reg.GaugeFunc("synapse_tier1_free_bytes", "Free space on the data file's filesystem at the last reading (0 without min_free_bytes).",
			func() float64 { return float64(d.free.Load()) })
	}
	for _, desc := range in.reg.List() {
		d.routines[desc.CapabilityID] = d.newRoutine(desc.CapabilityID)
	}
	err := in.db.View(func(tx *store.Tx) error {
		for _, id := range storedRoutines(tx) {
			if d.routines[id] == nil {
				d.routines[id] = d.newRoutine(id)
			}
		}
		for id, r := range d.routines {
			_, size := storedStats(tx, id)
			r.size.Store(int64(size))
			d.total.Add(int64(size))
			if v := tx.Meta(droppedKey(id)); len(v) == 8 {
				r.dropped.Store(binary.BigEndian.Uint64(v))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.refreshFree(true)
	in.disk = d
	return nil
}

// routine returns the state of routine id, adding it if new.
func (d *disk) routine(id string) *routineDisk {
	if r := d.routines[id]; r != nil {
		return r
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.extra[id]
	if r == nil {
		r = d.newRoutine(id)
		d.extra[id] = r
	}
	return r
}

func (d *disk) newRoutine(id string) *routineDisk {
	r := &routineDisk{id: id, dropped: new(atomic.Uint64), refused: new(atomic.Uint64)}
	if d.drops != nil {
		r.dropped, r.refused = d.drops.With(id), d.refusals.With(id)
	}
	return r
}

func droppedKey(id string) string { return "t1_dropped/" + id }

// budget is the bound on all routines together now: max_disk_bytes, or
// the bytes frozen by the floor, whichever is less; 0 when none.
func (d *disk) budget() int64 {
	b, f := d.conf().MaxDiskBytes, d.floorCap.Load()
	if f > 0 && (b == 0 || f < b) {
		return f
	}
	return b
}

// refreshFree reads the free space (at most once per statfsEvery unless
// force) and sets or lifts the floor's budget.
func (d *disk) refreshFree(force bool) {
	minFree := d.conf().MinFreeBytes
	if minFree <= 0 {
		d.floorCap.Store(0)
		return
	}
	now := d.now().UnixNano()
	if at := d.statAt.Load(); !force && now-at < int64(statfsEvery) && now >= at {
		return
	}
	if !d.statMu.TryLock() {
		return // another goroutine is reading it
	}
	defer d.statMu.Unlock()
	d.statAt.Store(now)
	free, err := d.freeFn(d.dir)
	if err != nil {
		if !d.statFailed {
			d.statFailed = true // logged once: it is read every second
			d.log.Warn("tier1: cannot read the free space; min_free_bytes is not enforced", "dir", d.dir, "err", err)
		}
		return
	}
	d.statFailed = false
	d.free.Store(int64(min(free, math.MaxInt64)))
	below := free < uint64(minFree)
	switch f := d.floorCap.Load(); {
	case below && f == 0:
		c := max(d.total.Load(), 1)
		d.floorCap.Store(c)
		d.log.Warn("tier1: free space below tier1.min_free_bytes: tier-1 data stops growing (drop_oldest routines drop their oldest frames, reject_new routines refuse)",
			"free_bytes", free, "min_free_bytes", minFree, "stored_bytes", c)
	case !below && f != 0:
		d.floorCap.Store(0)
		d.log.Info("tier1: free space back above tier1.min_free_bytes", "free_bytes", free, "min_free_bytes", minFree)
	}
}

// admit reserves room for a batch of n encoded bytes of routine id, or
// refuses it if the routine is reject_new and it does not fit. A batch
// admitted with a reservation returns true; finish releases it.
func (d *disk) admit(id, batchID string, n int64) (bool, error) {
	d.refreshFree(false)
	rlimit, reject := d.conf().quota(id)
	if !reject {
		return false, nil
	}
	r := d.routine(id)
	rs, gs := r.reserved.Add(n), d.reserved.Add(n)
	var limit string
	var max, have int64
	switch b := d.budget(); {
	case rlimit > 0 && r.size.Load()+rs > rlimit:
		limit, max, have = dropQuota, rlimit, r.size.Load()
	case b > 0 && d.total.Load()+gs > b:
		limit, max, have = dropBudget, b, d.total.Load()
		if d.floorCap.Load() == b {
			limit = dropFloor
		}
	default:
		return true, nil
	}
	r.reserved.Add(-n)
	d.reserved.Add(-n)
	r.refused.Add(1)
	what := map[string]string{dropQuota: "its quota (tier1.quotas max_bytes)", dropBudget: "the budget of all tier-1 data (tier1.max_disk_bytes)",
		dropFloor: "the space left above tier1.min_free_bytes"}[limit]
	return false, wire.Errorf(wire.CodeStorageQuota, "batch of routine %q refused, nothing stored: it does not fit in %s, %d of %d bytes used, and the routine's overflow is reject_new; retry once retention frees space", id, what, have, max).
		With("routine", id).With("limit", limit).With("stored_bytes", have).With("max_bytes", max).With("batch_id", batchID)
}

// release gives back the reservation of n bytes of routine id.
func (d *disk) release(id string, n int64) {
	d.routine(id).reserved.Add(-n)
	d.reserved.Add(-n)
}

// room is what one transaction found and dropped, applied to the state
// once it committed (committed).
type room struct {
	sizes []sized
	drops []drop
}

type sized struct {
	id   string
	size int64
}

type drop struct {
	id, reason string
	frames     int
	total      uint64 // the routine's durable count after it
}

func (rm *room) reset() { rm.sizes, rm.drops = rm.sizes[:0], rm.drops[:0] }

// prune deletes blocks of routine id in tx (pruneFrames' before and maxBytes,
// at most max), counts them durably and notes them in rm.
func (d *disk) prune(tx *store.Tx, rm *room, id, reason string, before int64, maxBytes uint64, max int) (blocks int, err error) {
	frames, blocks, err := pruneFrames(tx, id, before, maxBytes, max, BlockLen)
	if err != nil || frames == 0 {
		return blocks, err
	}
	key := droppedKey(id)
	var n uint64
	if v := tx.Meta(key); len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	n += uint64(frames)
	if err := tx.PutMeta(key, binary.BigEndian.AppendUint64(nil, n)); err != nil {
		return blocks, err
	}
	rm.drops = append(rm.drops, drop{id: id, reason: reason, frames: frames, total: n})
	return blocks, nil
}

// makeRoom drops, in the write transaction tx that just stored ids (each
// once) with about added bytes, what the drop_oldest routines hold beyond
// their limits and beyond the budget, and notes every size it read in rm.
func (d *disk) makeRoom(tx *store.Tx, rm *room, ids []string, added int64) error {
	c := d.conf()
	for _, id := range ids {
		limit, reject := c.quota(id)
		_, size := storedStats(tx, id)
		if !reject && limit > 0 && int64(size) > limit {
			if _, err := d.prune(tx, rm, id, dropQuota, math.MinInt64, uint64(limit), roomBlocks); err != nil {
				return err
			}
			_, size = storedStats(tx, id)
		}
		rm.sizes = append(rm.sizes, sized{id, int64(size)})
	}
	if b := d.budget(); b > 0 && d.total.Load()+added > b {
		_, err := d.fitBudget(tx, rm, roomBlocks)
		return err
	}
	return nil
}

// fitBudget drops the oldest blocks of the drop_oldest routines, oldest
// first, until all routines together fit the budget or max blocks are
// gone; it returns the blocks dropped.
func (d *disk) fitBudget(tx *store.Tx, rm *room, max int) (int, error) {
	b := d.budget()
	if b <= 0 {
		return 0, nil
	}
	reason := dropBudget
	if d.floorCap.Load() == b {
		reason = dropFloor
	}
	ids := storedRoutines(tx)
	sizes := make([]int64, len(ids))
	var total int64
	for i, id := range ids {
		_, s := storedStats(tx, id)
		sizes[i] = int64(s)
		total += int64(s)
	}
	done := 0
	for total > b && done < max {
		// the drop_oldest routine whose first block is the oldest
		pick, oldest := -1, int64(math.MaxInt64)
		for i, id := range ids {
			if _, reject := d.conf().quota(id); sizes[i] == 0 || reject {
				continue
			}
			first := int64(math.MaxInt64)
			if err := scanFrames(tx, id, nil, nil, func(k, _ []byte) bool { first = FrameKeyTime(k); return false }); err != nil {
				return done, err
			}
			if first <= oldest {
				pick, oldest = i, first
			}
		}
		if pick < 0 {
			break // only reject_new routines hold data
		}
		id := ids[pick]
		keep, before := sizes[pick]-(total-b), int64(math.MinInt64)
		if keep <= 0 {
			keep, before = 0, math.MaxInt64 // all of it: pruneFrames' 0 is "no size bound"
		}
		n, err := d.prune(tx, rm, id, reason, before, uint64(keep), min(16, max-done))
		if err != nil {
			return done, err
		}
		_, s := storedStats(tx, id)
		total -= sizes[pick] - int64(s)
		sizes[pick] = int64(s)
		rm.sizes = append(rm.sizes, sized{id, int64(s)})
		done += n
		if n == 0 {
			break
		}
	}
	return done, nil
}

// committed applies what a committed transaction found: sizes, drops, and
// the log lines of drops that reach a power of two.
func (d *disk) committed(rm *room, pruned *atomic.Uint64) {
	for _, s := range rm.sizes {
		r := d.routine(s.id)
		d.total.Add(s.size - r.size.Swap(s.size))
	}
	for _, dr := range rm.drops {
		r := d.routine(dr.id)
		pruned.Add(uint64(dr.frames))
		old := r.dropped.Load()
		for dr.total > old && !r.dropped.CompareAndSwap(old, dr.total) {
			old = r.dropped.Load()
		}
		if dr.total > old && bits.Len64(dr.total) > bits.Len64(old) {
			d.log.Warn("tier1: frames dropped", "routine", dr.id, "reason", dr.reason, "frames", dr.frames, "dropped_total", dr.total)
		}
	}
}

// update runs fn in a write transaction and, once it committed, applies
// its room on the writer goroutine (in commit order with the ingest
// writes).
func (d *disk) update(db *store.DB, pruned *atomic.Uint64, fn func(tx *store.Tx, rm *room) error) error {
	rm := &room{}
	done := make(chan error, 1)
	db.UpdateAsync(func(tx *store.Tx) error {
		rm.reset()
		return fn(tx, rm)
	}, func(err error) {
		if err == nil {
			d.committed(rm, pruned)
		}
		done <- err
	})
	return <-done // once queued, the write's outcome comes whatever ctx does
}

// Disk returns the disk-budget state of routine id (zero without UseDisk).
func (in *Ingestor) Disk(id string) DiskStatus {
	if in.disk == nil {
		return DiskStatus{}
	}
	r := in.disk.routine(id)
	limit, reject := in.disk.conf().quota(id)
	st := DiskStatus{MaxBytes: limit, Overflow: OverflowDropOldest, DroppedFrames: r.dropped.Load(), RefusedBatches: r.refused.Load()}
	if reject {
		st.Overflow = OverflowRejectNew
	}
	return st
}

// makeRoom is the disk budget's part of a write's transaction: the sizes
// of the routines it stored, and the drops their limits and the budget
// call for.
func (w *write) makeRoom(tx *store.Tx) error {
	d := w.in.disk
	if d == nil {
		return nil
	}
	w.room.reset()
	ids := make([]string, 0, len(w.routines))
	var added int64
	for i := range w.routines {
		r := &w.routines[i]
		ids = append(ids, r.d.CapabilityID)
		for j := range r.stored {
			added += int64(len(r.stored[j].dev) + 17 + len(r.stored[j].data))
		}
	}
	return d.makeRoom(tx, &w.room, ids, added)
}

// committed applies the write's room once it committed (err nil), then
// gives back the reservations of its batches.
func (w *write) committed(err error) {
	d := w.in.disk
	if d == nil {
		return
	}
	if err == nil {
		d.committed(&w.room, &w.in.C.Pruned)
	}
	for _, p := range w.ps {
		if p.room {
			d.release(p.b.CapabilityID, int64(p.bytes))
		}
	}
}
