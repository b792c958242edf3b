package commitlog_test

import (
	"bytes"
	"github.com/synapse-edge/synapse/internal/testutil"
	"strconv"
	"testing"

	"github.com/synapse-edge/synapse/store/commitlog"
)

// BenchmarkAppend appends groups of records of 200 bytes (a task's
// write-set) and reports what each record cost: the bytes the log wrote,
// the bytes the disk was sent (/proc/self/io), fdatasyncs.
func BenchmarkAppend(b *testing.B) {
	for _, group := range []int{1, 16} {
		b.Run("group="+strconv.Itoa(group), func(b *testing.B) {
			l, err := commitlog.Open(b.TempDir(), commitlog.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			recs := make([][]byte, group)
			for i := range recs {
				recs[i] = bytes.Repeat([]byte{'t'}, 200)
			}
			b.SetBytes(int64(200 * group))
			st := l.Stats()
			bytes0, syncs0, disk0 := st.Bytes.Load(), st.Syncs.Load(), testutil.WriteBytes()
			b.ResetTimer()
			for range b.N {
				if _, err := l.Append(recs); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(b.N * group)
			b.ReportMetric(float64(st.Bytes.Load()-bytes0)/n, "logB/record")
			b.ReportMetric(float64(st.Syncs.Load()-syncs0)/n, "fsyncs/record")
			if disk := testutil.WriteBytes(); disk >= 0 && disk0 >= 0 {
				b.ReportMetric(float64(disk-disk0)/n, "diskB/record")
			}
		})
	}
}

// BenchmarkReadRecord decodes a 200-byte record.
func BenchmarkReadRecord(b *testing.B) {
	raw := commitlog.AppendRecord(nil, 1, 0, bytes.Repeat([]byte{'t'}, 200))
	b.SetBytes(int64(len(raw)))
	for range b.N {
		if _, _, err := commitlog.ReadRecord(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenFull opens and replays a log of 16 MiB of 200-byte
// records (the default checkpoint limit reached): the restart cost.
func BenchmarkOpenFull(b *testing.B) {
	dir := b.TempDir()
	l, err := commitlog.Open(dir, commitlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	group := make([][]byte, 1024)
	for i := range group {
		group[i] = bytes.Repeat([]byte{'t'}, 200)
	}
	var size int64
	for size < 16<<20 {
		if _, err := l.Append(group); err != nil {
			b.Fatal(err)
		}
		size = l.Size()
	}
	l.Close()
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		l, err := commitlog.Open(dir, commitlog.Options{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := l.Replay(0, func(uint64, []byte) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		l.Close()
		if n == 0 {
			b.Fatal("replayed nothing")
		}
	}
}
