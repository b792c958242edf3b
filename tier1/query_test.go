package tier1_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// queryIngestor is an ingestor of the telemetry and mixed routines over a
// fresh store, with frames of three devices ingested: 40 per device, one
// every 100 ms from t0, in batches of 10 (4 blocks per device).
func queryIngestor(t *testing.T, t0 time.Time) *tier1.Ingestor {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	reg, err := tier1.NewRegistry(tier1.Telemetry(), mixed())
	if err != nil {
		t.Fatal(err)
	}
	in := tier1.NewIngestor(reg, db, tier1.IngestConfig{Now: func() time.Time { return t0 }})
	d := tier1.Telemetry()
	for _, dev := range []string{"a", "b", "c"} {
		for b := range 4 {
			fs := make([]tier1.Frame, 10)
			for i := range fs {
				n := b*10 + i
				fs[i] = tier1.Frame{tier1.Str(dev), tier1.Uint(uint64(n)), tier1.Int(t0.Add(time.Duration(n) * 100 * time.Millisecond).UnixNano()),
					tier1.Str("temp"), tier1.Float(float64(n)), tier1.Str("C")}
			}
			if _, err := in.Ingest(context.Background(), "s", "", tier1.AppendBatch(nil, d.CapabilityID, d.Version, "", fs, &d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return in
}

// frameKey names a telemetry frame: device/seq.
func frameKey(f tier1.Frame) string { return fmt.Sprintf("%s/%d", f.At(0).Str(), f.At(1).Uint()) }

// allPages reads every page of q, failing after 1,000 pages.
func allPages(t *testing.T, in *tier1.Ingestor, q tier1.FrameQuery) (keys []string, pages int) {
	t.Helper()
	for pages = 1; pages < 1000; pages++ {
		p, err := in.Frames(tier1.Telemetry().CapabilityID, q)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(p.Frames) > q.Limit {
			t.Fatalf("page %d has %d frames, limit %d", pages, len(p.Frames), q.Limit)
		}
		for _, f := range p.Frames {
			keys = append(keys, frameKey(f))
		}
		if p.NextPageToken == "" {
			return keys, pages
		}
		if !strings.HasPrefix(p.NextPageToken, "p1.") {
			t.Fatalf("token %q is not format 1", p.NextPageToken)
		}
		q.PageToken = p.NextPageToken
	}
	t.Fatal("more than 1,000 pages")
	return nil, 0
}

func TestFrames(t *testing.T) {
	t0 := time.Unix(1_790_000_000, 0)
	in := queryIngestor(t, t0)
	ns := func(d time.Duration) *int64 { n := t0.Add(d).UnixNano(); return &n }

	whole, pages := allPages(t, in, tier1.FrameQuery{Limit: tier1.MaxFramesPerPage})
	if len(whole) != 120 || pages != 1 {
		t.Fatalf("one page of everything = %d frames in %d pages, want 120 in 1", len(whole), pages)
	}
	seen := map[string]bool{}
	for _, k := range whole {
		if seen[k] {
			t.Fatalf("frame %s twice", k)
		}
		seen[k] = true
	}
	for _, limit := range []int{1, 7, 10, 11, 119, 120} {
		t.Run(fmt.Sprintf("pages of %d", limit), func(t *testing.T) {
			got, pages := allPages(t, in, tier1.FrameQuery{Limit: limit})
			if strings.Join(got, " ") != strings.Join(whole, " ") {
				t.Errorf("paged frames differ from one page:\n got %v\nwant %v", got, whole)
			}
			if want := (120 + limit - 1) / limit; pages != want && pages != want+1 {
				t.Errorf("%d pages, want %d (or one more, empty)", pages, want)
			}
		})
	}
	t.Run("device and time range", func(t *testing.T) {
		// b's frames 5 to 24: ts from +500ms, before +2500ms.
		got, _ := allPages(t, in, tier1.FrameQuery{DeviceID: "b", Since: ns(500 * time.Millisecond), Until: ns(2500 * time.Millisecond), Limit: 3})
		var want []string
		for n := 5; n < 25; n++ {
			want = append(want, fmt.Sprintf("b/%d", n))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("frames = %v, want %v", got, want)
		}
	})
	t.Run("unknown routine", func(t *testing.T) {
		_, err := in.Frames("no.such", tier1.FrameQuery{Limit: 1})
		if we := wire.AsError(err); we.Code != wire.CodeCapabilityLacking {
			t.Errorf("error = %v, want %s", err, wire.CodeCapabilityLacking)
		}
	})
	t.Run("bad limit", func(t *testing.T) {
		for _, l := range []int{0, -1, tier1.MaxFramesPerPage + 1} {
			_, err := in.Frames(tier1.Telemetry().CapabilityID, tier1.FrameQuery{Limit: l})
			if we := wire.AsError(err); we.Code != wire.CodeInvalidParams || we.Details["field"] != "limit" {
				t.Errorf("limit %d: %v, want invalid_params on limit", l, err)
			}
		}
	})
	t.Run("tokens", func(t *testing.T) {
		p, err := in.Frames(tier1.Telemetry().CapabilityID, tier1.FrameQuery{Limit: 5})
		if err != nil || p.NextPageToken == "" {
			t.Fatalf("first page: %v, token %q", err, p.NextPageToken)
		}
		// The token shows no store key: not the key of the last frame's block.
		raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(p.NextPageToken, "p1."))
		key := tier1.FrameKey(nil, t0.UnixNano(), "a", 1)
		if strings.Contains(string(raw), string(key[:8])) {
			t.Errorf("token %q holds the store key's time bytes", p.NextPageToken)
		}
		// An older agent's token: the block key and a uint16 index.
		old := base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint16(key, 4))
		cases := map[string]struct{ capID, tok, want string }{
			"older format":     {tier1.Telemetry().CapabilityID, old, "older version"},
			"another routine":  {mixed().CapabilityID, p.NextPageToken, "not one this agent gave"},
			"cut short":        {tier1.Telemetry().CapabilityID, p.NextPageToken[:len(p.NextPageToken)-1], "not one this agent gave"},
			"not a token":      {tier1.Telemetry().CapabilityID, "next", "not one this agent gave"},
			"base64 but short": {tier1.Telemetry().CapabilityID, "AAAA", "not one this agent gave"},
		}
		for name, c := range cases {
			t.Run(name, func(t *testing.T) {
				_, err := in.Frames(c.capID, tier1.FrameQuery{Limit: 5, PageToken: c.tok})
				we := wire.AsError(err)
				if we.Code != wire.CodeInvalidParams || we.Status() != 400 || we.Details["field"] != "page_token" || !strings.Contains(we.Message, c.want) {
					t.Errorf("error = %v (%v), want 400 invalid_params on page_token saying %q", err, we.Details, c.want)
				}
			})
		}
	})
}

func TestStored(t *testing.T) {
	t0 := time.Unix(1_790_000_000, 0)
	in := queryIngestor(t, t0)
	st, err := in.Stored(tier1.Telemetry().CapabilityID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Frames != 120 || st.Bytes == 0 || st.OldestTS != t0.UnixNano() {
		t.Errorf("Stored = %+v, want 120 frames, some bytes, oldest %d", st, t0.UnixNano())
	}
	if st, err := in.Stored(mixed().CapabilityID); err != nil || st != (tier1.Stored{}) {
		t.Errorf("Stored of a routine without frames = %+v, %v; want zero", st, err)
	}
}

func TestLiveFrames(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	in, _ := openIngestor(t, now)
	w := in.Watch(8, 1<<20)
	defer w.Close()
	for _, dev := range []string{"d1", "d2", "d1"} {
		if _, err := in.Ingest(context.Background(), "s", "", batchAt("", dev, 1, now, 2)); err != nil {
			t.Fatal(err)
		}
	}
	ls := []tier1.Live{<-w.C, <-w.C, <-w.C}
	d, frames, err := tier1.LiveFrames(ls, tier1.Telemetry().CapabilityID, "d1")
	if err != nil || d == nil || d.CapabilityID != tier1.Telemetry().CapabilityID {
		t.Fatalf("LiveFrames = %v, %v", d, err)
	}
	if len(frames) != 4 {
		t.Fatalf("frames of d1 = %d, want 4", len(frames))
	}
	for _, f := range frames {
		if f.At(0).Str() != "d1" {
			t.Errorf("frame of %s in d1's view", f.At(0).Str())
		}
	}
	if _, all, _ := tier1.LiveFrames(ls, tier1.Telemetry().CapabilityID, ""); len(all) != 6 {
		t.Errorf("frames of every device = %d, want 6", len(all))
	}
	if d, none, err := tier1.LiveFrames(ls, "other", ""); d != nil || len(none) != 0 || err != nil {
		t.Errorf("frames of another routine = %v, %d, %v; want none", d, len(none), err)
	}
}
