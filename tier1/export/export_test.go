package export_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/export"
	"github.com/synapse-edge/synapse/transport"
)

// upstream is a scripted upstream seen as a transport: each send gets
// the next outcome of its script (Delivered once the script is done,
// Retry while down), after delay; it records the batch ids it took.
type upstream struct {
	mu     sync.Mutex
	script []transport.Outcome
	down   bool
	delay  time.Duration
	took   map[string][]string // endpoint → batch ids delivered, in order
	sends  int
}

func newUpstream() *upstream { return &upstream{took: map[string][]string{}} }

func (u *upstream) Send(ctx context.Context, m *transport.Message) transport.Outcome {
	u.mu.Lock()
	d := u.delay
	u.mu.Unlock()
	if d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return transport.Unreachable(ctx.Err())
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sends++
	if u.down {
		return transport.Unreachable(errors.New("down"))
	}
	o := transport.Outcome{Class: transport.Delivered}
	if len(u.script) > 0 {
		o, u.script = u.script[0], u.script[1:]
	}
	if o.Class == transport.Delivered {
		u.took[m.To] = append(u.took[m.To], batchID(m.Body))
	}
	return o
}

func (u *upstream) ids(to string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.took[to]...)
}

func batchID(b []byte) string {
	reg, _ := tier1.NewRegistry(tier1.Telemetry())
	d, err := tier1.DecodeBatch(b, reg, tier1.Limits{})
	if err != nil {
		return "bad:" + err.Error()
	}
	return d.BatchID
}

type agent struct {
	t    *testing.T
	path string
	db   *store.DB
	in   *tier1.Ingestor
	now  func() time.Time
}

func openAgent(t *testing.T, path string) *agent {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "a.db")
	}
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := tier1.NewRegistry(tier1.Telemetry())
	a := &agent{t: t, path: path, db: db, now: time.Now}
	a.in = tier1.NewIngestor(reg, db, tier1.IngestConfig{Now: a.now})
	return a
}

func (a *agent) close() { _ = a.db.Close(context.Background()) }

func (a *agent) ingest(dev string, seq uint64, n int) {
	a.t.Helper()
	d := tier1.Telemetry()
	fs := make([]tier1.Frame, n)
	ts := time.Now().UnixNano()
	for i := range fs {
		fs[i] = tier1.Frame{tier1.Str(dev), tier1.Uint(seq + uint64(i)), tier1.Int(ts + int64(i)), tier1.Str("temp"), tier1.Float(20.5), tier1.Str("C")}
	}
	if _, err := a.in.Ingest(context.Background(), "s", "", tier1.AppendBatch(nil, d.CapabilityID, d.Version, "", fs, &d)); err != nil {
		a.t.Fatal(err)
	}
}

// start opens exports over the agent and runs them until the test's end
// or stop.
func (a *agent) start(up transport.Transport, global int64, cs ...export.Config) (s *export.Set, stop func()) {
	a.t.Helper()
	s = export.New(cs, export.Options{Ingestor: a.in, DB: a.db, Transport: up, Source: "edge-1", BandwidthBytesPerS: global,
		Logger: slog.New(slog.DiscardHandler), Now: a.now})
	if err := s.Open(context.Background()); err != nil {
		a.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	a.t.Cleanup(stop)
	return s, stop
}

func status(s *export.Set, name string) export.ExportStatus {
	for _, e := range s.Status().Exports {
		if e.Name == name {
			return e
		}
	}
	return export.ExportStatus{}
}

// conserved checks stored = sent + dropped + skipped + queued for each
// export, stored counting the frames queued since it began (from).
func conserved(t *testing.T, s *export.Set, stored map[string]uint64) {
	t.Helper()
	for _, e := range s.Status().Exports {
		if got := e.SentFrames + e.DroppedFrames + e.SkippedFrames + e.BacklogFrames; got != stored[e.Name] {
			t.Errorf("%s: sent %d + dropped %d + skipped %d + queued %d = %d, stored %d", e.Name,
				e.SentFrames, e.DroppedFrames, e.SkippedFrames, e.BacklogFrames, got, stored[e.Name])
		}
	}
}

// TestOutcomes: a batch leaves an export only when delivered (counted
// sent) or refused for good (dropped); a Retry sends it again, in order.
func TestOutcomes(t *testing.T) {
	a := openAgent(t, "")
	defer a.close()
	up := newUpstream()
	up.script = []transport.Outcome{
		transport.Unreachable(errors.New("down")),                    // batch 1
		{Class: transport.Delivered},                                 // batch 1 again
		{Class: transport.Permanent, Err: errors.New("malformed")},   // batch 2
		{Class: transport.Negotiable, Err: errors.New("no routine")}, // batch 3
	}
	s, stop := a.start(up, 0, export.Config{Name: "x", Endpoint: "http://127.0.0.1:9", Start: "all", MaxBackoffMS: 1, Order: "fifo"})
	for i := range 5 {
		a.ingest("d", uint64(i*10), 2)
	}
	testutil.Eventually(t, 10*time.Second, "every batch settled", func() bool { return status(s, "x").BacklogFrames == 0 })
	stop()
	if got := up.ids("http://127.0.0.1:9"); len(got) != 3 || got[0] != "u1" || got[1] != "u4" || got[2] != "u5" {
		t.Errorf("delivered %v, want [u1 u4 u5]", got)
	}
	st := status(s, "x")
	if st.SentFrames != 6 || st.DroppedFrames != 4 {
		t.Errorf("sent %d dropped %d, want 6 4", st.SentFrames, st.DroppedFrames)
	}
	conserved(t, s, map[string]uint64{"x": 10})
}
