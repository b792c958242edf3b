package tier1_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// diskAgent is an ingestor with a disk budget over the store at path.
type diskAgent struct {
	in  *tier1.Ingestor
	db  *store.DB
	log *bytes.Buffer
	reg *metrics.Registry
	cfg tier1.Config
}

func openDisk(t *testing.T, path string, c tier1.Config, now time.Time) *diskAgent {
	t.Helper()
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tier1.NewRegistry(tier1.Telemetry(), mixed())
	if err != nil {
		t.Fatal(err)
	}
	a := &diskAgent{db: db, log: &bytes.Buffer{}, reg: metrics.New(), cfg: c}
	a.in = tier1.NewIngestor(reg, db, tier1.IngestConfig{Now: func() time.Time { return now }})
	if err := a.in.UseDisk(func() *tier1.Config { return &a.cfg }, path, slog.New(slog.NewTextHandler(a.log, nil)), a.reg); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *diskAgent) close(t *testing.T) {
	t.Helper()
	if err := a.db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (a *diskAgent) stored(t *testing.T, id string) tier1.Stored {
	t.Helper()
	st, err := a.in.Stored(id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// diskConfig is the default tier1 section with quotas.
func diskConfig(maxDisk int64, qs ...tier1.Quota) tier1.Config {
	c := tier1.DefaultConfig()
	c.MaxDiskBytes, c.Quotas = maxDisk, qs
	return c
}

// TestDiskRejectNew: a reject_new routine refuses, whole and retriable,
// the batch that would take it over its max_bytes, stores nothing of it,
// drops nothing, and counts the refusal.
func TestDiskRejectNew(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	a := openDisk(t, filepath.Join(t.TempDir(), "d.db"), diskConfig(0,
		tier1.Quota{Routine: "synapse.telemetry", MaxBytes: 4096, Overflow: tier1.OverflowRejectNew}), now)
	defer a.close(t)
	ctx := context.Background()
	var refused *wire.Error
	sent := 0
	for i := range 100 {
		_, err := a.in.Ingest(ctx, "s", "", batchAt(fmt.Sprintf("b%d", i), "d1", uint64(i*10), now.Add(time.Duration(i)*time.Second), 10))
		if err != nil {
			if !errors.As(err, &refused) {
				t.Fatalf("batch %d: %v, want a *wire.Error", i, err)
			}
			break
		}
		sent += 10
	}
	if refused == nil {
		t.Fatal("100 batches of 10 frames fit in 4096 bytes")
	}
	if refused.Code != wire.CodeStorageQuota || !refused.Retriable || refused.Status() != 507 ||
		refused.Details["routine"] != "synapse.telemetry" || refused.Details["limit"] != "max_bytes" ||
		!strings.Contains(refused.Message, "reject_new") {
		t.Errorf("refusal = %+v (status %d), want 507 storage_quota_exceeded, retriable, naming the routine and max_bytes", refused, refused.Status())
	}
	st := a.stored(t, "synapse.telemetry")
	if st.Frames != uint64(sent) || st.Bytes > 4096 {
		t.Errorf("stored %d frames in %d bytes, want the %d acknowledged in at most 4096", st.Frames, st.Bytes, sent)
	}
	// Again: still refused, still nothing dropped; the other routine is not
	// bound by this quota.
	if _, err := a.in.Ingest(ctx, "s", "", batchAt("again", "d1", 5000, now.Add(time.Hour), 10)); !errors.As(err, &refused) || refused.Code != wire.CodeStorageQuota {
		t.Errorf("second refusal: %v", err)
	}
	if err := a.in.Prune(ctx, now, a.cfg, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	ds := a.in.Disk("synapse.telemetry")
	if ds.DroppedFrames != 0 || ds.RefusedBatches != 2 || ds.Overflow != "reject_new" || ds.MaxBytes != 4096 {
		t.Errorf("disk status %+v, want 0 dropped, 2 refused, reject_new, 4096", ds)
	}
	if got := a.stored(t, "synapse.telemetry").Frames; got != uint64(sent) {
		t.Errorf("after Prune: %d frames, want %d (reject_new drops nothing)", got, sent)
	}
	var buf bytes.Buffer
	a.reg.Write(&buf)
	if !strings.Contains(buf.String(), `synapse_tier1_quota_refused_batches_total{routine="synapse.telemetry"} 2`) {
		t.Errorf("metrics lack the refusals:\n%s", grepLines(buf.String(), "synapse_tier1_"))
	}
}

// TestDiskDropOldest: a drop_oldest routine takes every batch and keeps
// within max_bytes by dropping its oldest frames in the write that goes
// over; the drops are counted, durable across a reopen, logged at the
// first and at powers of two, and in /metrics.
func TestDiskDropOldest(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	path := filepath.Join(t.TempDir(), "d.db")
	c := diskConfig(0, tier1.Quota{Routine: "synapse.telemetry", MaxBytes: 4096})
	a := openDisk(t, path, c, now)
	ctx := context.Background()
	total := 0
	for i := range 100 {
		// one device per batch: one block per batch, so drops are whole batches
		if _, err := a.in.Ingest(ctx, "s", "", batchAt(fmt.Sprintf("b%d", i), fmt.Sprintf("dev%03d", i), 0, now.Add(time.Duration(i)*time.Second), 10)); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		total += 10
		if st := a.stored(t, "synapse.telemetry"); st.Bytes > 4096 {
			t.Fatalf("after batch %d: %d bytes stored, over max_bytes 4096", i, st.Bytes)
		}
	}
	st := a.stored(t, "synapse.telemetry")
	ds := a.in.Disk("synapse.telemetry")
	if ds.DroppedFrames == 0 || st.Frames+ds.DroppedFrames != uint64(total) {
		t.Fatalf("stored %d + dropped %d frames, want %d with some dropped", st.Frames, ds.DroppedFrames, total)
	}
	if want := now.Add(time.Duration(100-st.Frames/10) * time.Second).UnixNano(); st.OldestTS != want {
		t.Errorf("oldest kept %d, want %d: the newest are kept", st.OldestTS, want)
	}
	logs := strings.Count(a.log.String(), "tier1: frames dropped")
	if want := powersCrossed(ds.DroppedFrames, 10); logs != want || !strings.Contains(a.log.String(), "reason=max_bytes") {
		t.Errorf("%d drop lines for %d frames dropped 10 at a time, want %d (first, then powers of two):\n%s", logs, ds.DroppedFrames, want, a.log)
	}
	var buf bytes.Buffer
	a.reg.Write(&buf)
	if !strings.Contains(buf.String(), fmt.Sprintf(`synapse_tier1_dropped_frames_total{routine="synapse.telemetry"} %d`, ds.DroppedFrames)) {
		t.Errorf("metrics lack the drops:\n%s", grepLines(buf.String(), "synapse_tier1_"))
	}
	a.close(t)

	b := openDisk(t, path, c, now)
	defer b.close(t)
	if got := b.in.Disk("synapse.telemetry").DroppedFrames; got != ds.DroppedFrames {
		t.Errorf("after reopen: %d dropped, want %d", got, ds.DroppedFrames)
	}
}

// powersCrossed is how many lines a count growing by step to n logs: one
// each time it reaches a new power of two.
func powersCrossed(n, step uint64) int {
	lines := 0
	for old := uint64(0); old < n; old += step {
		for p := uint64(1); p <= old+step; p <<= 1 {
			if p > old {
				lines++
				break
			}
		}
	}
	return lines
}

// TestDiskBudget: max_disk_bytes bounds both routines together; the
// drop_oldest routine gives way, the reject_new one refuses once the
// budget is full and is never dropped.
func TestDiskBudget(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	c := diskConfig(8192, tier1.Quota{Routine: "t.mixed", Overflow: tier1.OverflowRejectNew})
	c.MaxBatchBytes = 4096
	a := openDisk(t, filepath.Join(t.TempDir(), "d.db"), c, now)
	defer a.close(t)
	ctx := context.Background()
	// the reject_new routine takes about half the budget
	mixedSent := 0
	for i := 0; ; i++ {
		if _, err := a.in.Ingest(ctx, "s", "", mixedBatch(t, fmt.Sprintf("m%d", i), i)); err != nil {
			t.Fatalf("mixed batch %d: %v", i, err)
		}
		mixedSent++
		if a.stored(t, "t.mixed").Bytes > 4000 {
			break
		}
	}
	for i := range 200 {
		if _, err := a.in.Ingest(ctx, "s", "", batchAt(fmt.Sprintf("t%d", i), fmt.Sprintf("dev%03d", i), 0, now.Add(time.Duration(i)*time.Second), 10)); err != nil {
			t.Fatalf("telemetry batch %d: %v", i, err)
		}
		tel, mix := a.stored(t, "synapse.telemetry"), a.stored(t, "t.mixed")
		if tel.Bytes+mix.Bytes > 8192 {
			t.Fatalf("after batch %d: %d + %d bytes, over max_disk_bytes 8192", i, tel.Bytes, mix.Bytes)
		}
	}
	if d := a.in.Disk("synapse.telemetry"); d.DroppedFrames == 0 || !strings.Contains(a.log.String(), "reason=max_disk_bytes") {
		t.Errorf("telemetry dropped %d frames; log:\n%s", d.DroppedFrames, a.log)
	}
	if got := a.stored(t, "t.mixed").Frames; got != uint64(mixedSent) {
		t.Errorf("mixed holds %d frames, want all %d: reject_new is never dropped for space", got, mixedSent)
	}
	// The telemetry routine fills the rest of the budget: the reject_new
	// one is refused with limit max_disk_bytes.
	var we *wire.Error
	for i := mixedSent; ; i++ {
		_, err := a.in.Ingest(ctx, "s", "", mixedBatch(t, fmt.Sprintf("m%d", i), i))
		if err == nil {
			if i > mixedSent+100 {
				t.Fatal("the reject_new routine was never refused")
			}
			continue
		}
		if !errors.As(err, &we) || we.Code != wire.CodeStorageQuota || we.Details["limit"] != "max_disk_bytes" {
			t.Fatalf("refusal %v, want storage_quota_exceeded of max_disk_bytes", err)
		}
		break
	}
}

// mixedBatch is a one-frame batch of the test.mixed routine.
func mixedBatch(t *testing.T, id string, i int) []byte {
	t.Helper()
	d := mixed()
	f := make(tier1.Frame, len(d.Fields))
	for j, fd := range d.Fields {
		switch fd.Type {
		case tier1.TypeStr:
			f[j] = tier1.Str(fmt.Sprintf("v%04d", i))
		case tier1.TypeInt:
			f[j] = tier1.Int(int64(i))
		case tier1.TypeUint:
			f[j] = tier1.Uint(uint64(i))
		case tier1.TypeFloat:
			f[j] = tier1.Float(1.5)
		case tier1.TypeBool:
			f[j] = tier1.Bool(true)
		case tier1.TypeBin:
			f[j] = tier1.Bin(bytes.Repeat([]byte{1}, 64))
		}
	}
	return tier1.AppendBatch(nil, d.CapabilityID, d.Version, id, []tier1.Frame{f}, &d)
}

// TestDiskRetentionCounted: frames dropped for age are counted and logged
// as retention_hours drops, whatever the policy.
func TestDiskRetentionCounted(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	c := diskConfig(0, tier1.Quota{Routine: "synapse.telemetry", Overflow: tier1.OverflowRejectNew})
	a := openDisk(t, filepath.Join(t.TempDir(), "d.db"), c, now)
	defer a.close(t)
	ctx := context.Background()
	old := now.Add(-800 * time.Hour)
	if _, err := a.in.Ingest(ctx, "s", "", batchAt("old", "d1", 0, old, 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.in.Ingest(ctx, "s", "", batchAt("new", "d2", 0, now, 3)); err != nil {
		t.Fatal(err)
	}
	if err := a.in.Prune(ctx, now, c, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if d, st := a.in.Disk("synapse.telemetry"), a.stored(t, "synapse.telemetry"); d.DroppedFrames != 5 || st.Frames != 3 {
		t.Errorf("dropped %d, kept %d; want 5 and 3", d.DroppedFrames, st.Frames)
	}
	if !strings.Contains(a.log.String(), "reason=retention_hours") {
		t.Errorf("log:\n%s", a.log)
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// BenchmarkStoreOneFrameDiskBudget is BenchmarkStoreOneFrame with every
// limit of the disk budget set (far from full): a reject_new quota (each
// batch reserved and released), max_disk_bytes and min_free_bytes. Compare
// it with BenchmarkStoreOneFrame in one interleaved run.
func BenchmarkStoreOneFrameDiskBudget(b *testing.B) {
	in := benchIngestor(b)
	c := diskConfig(1<<40, tier1.Quota{Routine: "synapse.telemetry", MaxBytes: 1 << 39, Overflow: tier1.OverflowRejectNew})
	c.MinFreeBytes = 1
	if err := in.UseDisk(func() *tier1.Config { return &c }, filepath.Join(b.TempDir(), "x.db"), nil, nil); err != nil {
		b.Fatal(err)
	}
	storeOneFrame(b, in)
}
