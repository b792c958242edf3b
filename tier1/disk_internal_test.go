package tier1

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// TestDiskFloor: below min_free_bytes (the free space read through the
// statfs seam), tier-1 data stops growing: the drop_oldest routine keeps
// taking batches and holds the bytes it had, a reject_new routine is
// refused naming min_free_bytes; with space back both grow again. The free
// space is read at most once a second.
func TestDiskFloor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	other := Descriptor{CapabilityID: "t.other", Version: "1", Fields: []Field{{Name: "device_id", Type: TypeStr}, {Name: "ts", Type: TypeInt}}}
	reg, err := NewRegistry(Telemetry(), other)
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	base := time.Unix(1_790_000_000, 0)
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	clock.Store(base.UnixNano())
	in := NewIngestor(reg, db, IngestConfig{Now: now})
	c := DefaultConfig()
	c.MinFreeBytes = 1 << 30
	c.Quotas = []Quota{{Routine: "t.other", Overflow: OverflowRejectNew}}
	var free atomic.Uint64
	free.Store(2 << 30)
	var statfs atomic.Int64
	var log bytes.Buffer
	if err := in.UseDisk(func() *Config { return &c }, path, slog.New(slog.NewTextHandler(&log, nil)), nil); err != nil {
		t.Fatal(err)
	}
	in.disk.freeFn = func(string) (uint64, error) { statfs.Add(1); return free.Load(), nil }
	ctx := context.Background()
	tel := Telemetry()
	seq := 0
	sendTel := func() error {
		seq++
		fs := []Frame{{Str(fmt.Sprintf("dev%04d", seq)), Uint(1), Int(base.UnixNano() + int64(seq)), Str("temp"), Float(1), Str("C")}}
		_, err := in.Ingest(ctx, "s", "", AppendBatch(nil, tel.CapabilityID, tel.Version, fmt.Sprintf("t%d", seq), fs, &tel))
		return err
	}
	sendOther := func() error {
		seq++
		fs := []Frame{{Str(fmt.Sprintf("dev%04d", seq)), Int(base.UnixNano() + int64(seq))}}
		_, err := in.Ingest(ctx, "s", "", AppendBatch(nil, other.CapabilityID, other.Version, fmt.Sprintf("o%d", seq), fs, &other))
		return err
	}
	stored := func(id string) uint64 { st, _ := in.Stored(id); return st.Bytes }
	for range 20 {
		if err := sendTel(); err != nil {
			t.Fatal(err)
		}
		if err := sendOther(); err != nil {
			t.Fatal(err)
		}
	}
	if n := statfs.Load(); n > 1 {
		t.Errorf("%d statfs calls in one clock second, want at most 1", n)
	}
	// The disk fills: at the next reading the budget freezes.
	free.Store(1 << 20)
	clock.Add(int64(2 * time.Second))
	err = sendOther()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeStorageQuota || we.Details["limit"] != "min_free_bytes" {
		t.Fatalf("reject_new below the floor: %v, want storage_quota_exceeded of min_free_bytes", err)
	}
	frozen := stored(Telemetry().CapabilityID) + stored("t.other")
	for range 30 {
		if err := sendTel(); err != nil {
			t.Fatalf("drop_oldest below the floor: %v", err)
		}
		if got := stored(Telemetry().CapabilityID) + stored("t.other"); got > frozen {
			t.Fatalf("below the floor tier-1 data grew from %d to %d bytes", frozen, got)
		}
	}
	if d := in.Disk(Telemetry().CapabilityID); d.DroppedFrames == 0 || !strings.Contains(log.String(), "reason=min_free_bytes") ||
		!strings.Contains(log.String(), "below tier1.min_free_bytes") {
		t.Errorf("dropped %d; log:\n%s", d.DroppedFrames, log.String())
	}
	if got := in.Disk("t.other").DroppedFrames; got != 0 {
		t.Errorf("reject_new routine lost %d frames to the floor", got)
	}
	// Space comes back.
	free.Store(4 << 30)
	clock.Add(int64(2 * time.Second))
	if err := sendOther(); err != nil {
		t.Fatalf("with space back: %v", err)
	}
	if got := stored(Telemetry().CapabilityID) + stored("t.other"); got <= frozen {
		t.Errorf("with space back tier-1 data did not grow: %d bytes, frozen at %d", got, frozen)
	}
}

// TestDiskFloorUnreadable: when the free space cannot be read the floor is
// not enforced (ingest goes on) and that is logged once, not every second.
func TestDiskFloorUnreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.db")
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	reg, err := NewRegistry(Telemetry())
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(time.Unix(1_790_000_000, 0).UnixNano())
	in := NewIngestor(reg, db, IngestConfig{Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	c := DefaultConfig()
	c.MinFreeBytes = 1 << 30
	c.Quotas = []Quota{{Routine: Telemetry().CapabilityID, Overflow: OverflowRejectNew}}
	var log bytes.Buffer
	if err := in.UseDisk(func() *Config { return &c }, path, slog.New(slog.NewTextHandler(&log, nil)), nil); err != nil {
		t.Fatal(err)
	}
	in.disk.freeFn = func(string) (uint64, error) { return 0, errors.New("statfs: no such thing") }
	tel := Telemetry()
	for i := range 5 {
		clock.Add(int64(2 * time.Second))
		fs := []Frame{{Str("d"), Uint(uint64(i)), Int(clock.Load()), Str("temp"), Float(1), Str("C")}}
		if _, err := in.Ingest(context.Background(), "s", "", AppendBatch(nil, tel.CapabilityID, tel.Version, fmt.Sprintf("b%d", i), fs, &tel)); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if n := strings.Count(log.String(), "cannot read the free space"); n != 1 {
		t.Errorf("%d lines about the unreadable free space, want 1:\n%s", n, log.String())
	}
}
