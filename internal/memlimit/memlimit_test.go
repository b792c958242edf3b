package memlimit_test

import (
	"context"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/memlimit"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mb int
		ok bool
	}{{0, true}, {12, true}, {16, true}, {4096, true}, {11, false}, {-1, false}, {memlimit.MaxMemoryMB + 1, false}} {
		err := memlimit.Config{MemoryMB: tc.mb}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("memory_mb %d: got %v, want ok=%v", tc.mb, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "limits.memory_mb") {
			t.Errorf("memory_mb %d: %q does not name the field", tc.mb, err)
		}
	}
}

func TestBudgets(t *testing.T) {
	for _, tc := range []struct {
		mb        int
		soft      int64
		inflight  int64
		readAhead int
	}{
		{0, 16 << 20, 1536 << 10, 4096}, // the default is 16
		{16, 16 << 20, 1536 << 10, 4096},
		{12, 12 << 20, 1 << 20, 3072},
		{128, 128 << 20, 15872 << 10, 4096}, // about the in-flight budget before there was a memory budget
		{1024, 1024 << 20, 130560 << 10, 4096},
	} {
		b := memlimit.Config{MemoryMB: tc.mb}.Budgets()
		if b.SoftLimit != tc.soft || b.Tier1Inflight != tc.inflight || b.Tier1ReadAhead != tc.readAhead {
			t.Errorf("memory_mb %d: got soft %d, in flight %d, read-ahead %d; want %d, %d, %d",
				tc.mb, b.SoftLimit, b.Tier1Inflight, b.Tier1ReadAhead, tc.soft, tc.inflight, tc.readAhead)
		}
		if b.Total != int64(memlimit.Config{MemoryMB: tc.mb}.MB())<<20 {
			t.Errorf("memory_mb %d: total %d", tc.mb, b.Total)
		}
	}
}

// TestApply: the soft limit is set, a lower one is kept, and undo puts
// back the one before.
func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	debug.SetMemoryLimit(1 << 40)
	b := memlimit.Config{MemoryMB: 64}.Budgets()
	undo := memlimit.Apply(b)
	if got := debug.SetMemoryLimit(-1); got != b.SoftLimit {
		t.Fatalf("limit %d after Apply, want %d", got, b.SoftLimit)
	}
	undo()
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Fatalf("limit %d after undo, want %d", got, int64(1<<40))
	}
	debug.SetMemoryLimit(b.SoftLimit / 2) // GOMEMLIMIT, lower
	undo = memlimit.Apply(b)
	if got := debug.SetMemoryLimit(-1); got != b.SoftLimit/2 {
		t.Fatalf("Apply raised a lower limit to %d", got)
	}
	undo()
	if got := debug.SetMemoryLimit(-1); got != b.SoftLimit/2 {
		t.Fatalf("undo changed a limit Apply kept: %d", got)
	}
}

// fakeAllocs is an allocation counter the test moves.
type fakeAllocs struct{ n uint64 }

func (f *fakeAllocs) read() uint64 { return f.n }

// TestTrimmerTrimsOnceWhenQuiet: work, then quiet checks: the trim comes
// at the After-th quiet check, once; work re-arms it; a check that is
// not quiet resets the count.
func TestTrimmerTrimsOnceWhenQuiet(t *testing.T) {
	allocs := &fakeAllocs{}
	frees := 0
	tr := memlimit.NewTrimmer(memlimit.TrimOptions{Quiet: 1000, After: 3, Allocated: allocs.read, Free: func() { frees++ }})
	step := func(alloc uint64) bool { allocs.n += alloc; return tr.Check() }
	var got []bool
	for _, a := range []uint64{50_000, 10, 10, 10, 10, 10, 999, 5_000, 0, 0, 2_000, 0, 0, 0} {
		got = append(got, step(a))
	}
	want := []bool{false, false, false, true, false, false, false, false, false, false, false, false, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("checks trimmed %v, want %v", got, want)
		}
	}
	if frees != 2 || tr.Trims.Load() != 2 {
		t.Fatalf("%d frees, %d trims counted; want 2", frees, tr.Trims.Load())
	}
}

// TestTrimmerStartClose: the real runtime counter and FreeOSMemory, on a
// short period: an idle test process is trimmed; Close stops it and is
// safe twice.
func TestTrimmerStartClose(t *testing.T) {
	tr := memlimit.NewTrimmer(memlimit.TrimOptions{Every: 20 * time.Millisecond, Quiet: 4 << 20, After: 2})
	tr.Start(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for tr.Trims.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("an idle process was not trimmed within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := memlimit.NewTrimmer(memlimit.TrimOptions{}).Close(ctx); err != nil {
		t.Fatalf("Close without Start: %v", err)
	}
}
