package cli

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/tier1"
)

func TestGroupDigits(t *testing.T) {
	for _, tt := range []struct {
		in   int64
		want string
	}{{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {12345, "12,345"}, {1234000, "1,234,000"}, {-1234567, "-1,234,567"}} {
		if got := groupDigits(tt.in); got != tt.want {
			t.Errorf("groupDigits(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseTimeFlag(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct{ in, want, err string }{
		{"", "", ""},
		{"1700000000000000000", "1700000000000000000", ""},
		{"2025-01-02T03:04:05Z", "2025-01-02T03:04:05Z", ""},
		{"2025-01-02T03:04:05.5+02:00", "2025-01-02T03:04:05.5+02:00", ""},
		{"1h", strconv.FormatInt(now.Add(-time.Hour).UnixNano(), 10), ""},
		{" 90s ", strconv.FormatInt(now.Add(-90*time.Second).UnixNano(), 10), ""},
		{"-1h", "", "want an RFC 3339 time"},
		{"yesterday", "", "want an RFC 3339 time"},
		{"2025-01-02", "", "want an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTimeFlag("since", tt.in, now)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCSVValue(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, ""}, {`null`, ""}, {`"dev-1"`, "dev-1"}, {`"a\"b\n"`, "a\"b\n"}, {`"\u00e9"`, "é"},
		{`18446744073709551615`, "18446744073709551615"}, {`-9223372036854775808`, "-9223372036854775808"},
		{`21.5`, "21.5"}, {`1e-7`, "1e-7"}, {`true`, "true"}, {`"AAEC"`, "AAEC"},
	} {
		if got := csvValue(json.RawMessage(tt.in)); got != tt.want {
			t.Errorf("csvValue(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFieldList(t *testing.T) {
	d := tier1.Telemetry()
	var fields []client.Tier1Field
	for _, f := range d.Fields {
		fields = append(fields, client.Tier1Field{Name: f.Name, Type: string(f.Type), Unit: f.Unit, Optional: f.Optional})
	}
	got, want := fieldList(fields), "device_id:str seq:uint ts:int[ns] metric:str value:float unit:str?"
	if got != want {
		t.Errorf("fieldList = %q, want %q", got, want)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of unsorted", ms(5, 1, 4, 2, 3), 0.5, 3 * time.Millisecond},
		{"median of even count is the lower", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 100", ms(func() []int {
			var ns []int
			for i := 100; i >= 1; i-- {
				ns = append(ns, i)
			}
			return ns
		}()...), 0.99, 99 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.ds, tt.p); got != tt.want {
				t.Errorf("percentile = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestLiveText(t *testing.T) {
	got := liveText(12345.4, 1234000, 0, 3100*time.Microsecond)
	if want := "12,345 frames/s  1,234,000 acked  0 refused  p50 ack 3.1 ms"; got != want {
		t.Errorf("liveText = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{420 * time.Microsecond, "0.42 ms"}, {12 * time.Millisecond, "12.0 ms"}, {123456 * time.Microsecond, "123 ms"}} {
		if got := millis(tt.d); got != tt.want {
			t.Errorf("millis(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestBatchGen(t *testing.T) {
	cfg := sendConfig{batch: 5, devices: 3, metric: "temp", unit: "C"}
	g := newBatchGen(cfg)
	reg, err := tier1.NewRegistry(tier1.Telemetry())
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixNano()
	wantSeq := map[string]uint64{}
	for n := 1; n <= 3; n++ {
		size := 5
		if n == 3 {
			size = 2
		}
		pb := g.next(size)
		b, err := tier1.DecodeBatch(pb.data, reg, tier1.Limits{})
		if err != nil {
			t.Fatalf("batch %d does not decode: %v", n, err)
		}
		wantID := regexp.MustCompile(`^.+-` + strconv.Itoa(os.Getpid()) + `-[0-9a-f]{8}-` + strconv.Itoa(n) + `$`)
		if pb.id != b.BatchID || !wantID.MatchString(b.BatchID) || pb.frames != size || len(b.Frames) != size {
			t.Fatalf("batch %d: id %q (decoded %q), %d frames (decoded %d); want id matching %s and %d frames",
				n, pb.id, b.BatchID, pb.frames, len(b.Frames), wantID, size)
		}
		for _, f := range b.Frames {
			dev := f.At(0).Str()
			wantSeq[dev]++
			if got := f.At(1).Uint(); got != wantSeq[dev] {
				t.Errorf("%s: seq %d, want %d", dev, got, wantSeq[dev])
			}
			if ts := f.At(2).Int(); ts < before || ts > time.Now().UnixNano() {
				t.Errorf("ts %d is not the time of sending", ts)
			}
			if f.At(3).Str() != "temp" || f.At(5).Str() != "C" {
				t.Errorf("frame %v: want metric temp and unit C", f)
			}
			if v := f.At(4).Float(); v < 14 || v > 26 || v*16 != float64(int(v*16)) {
				t.Errorf("value %v: want 20±5 in steps of 1/16", v)
			}
		}
	}
	if other := newBatchGen(cfg); other.prefix == g.prefix {
		t.Errorf("two runs share the batch id prefix %q", g.prefix)
	}
	// 12 frames over 3 devices in turn.
	for _, dev := range []string{"dev-0001", "dev-0002", "dev-0003"} {
		if wantSeq[dev] != 4 {
			t.Errorf("%s sent %d frames, want 4 (devices take turns)", dev, wantSeq[dev])
		}
	}
}

func TestProduce(t *testing.T) {
	collect := func(t *testing.T, ctx context.Context, cfg sendConfig) (frames []int, interrupted bool, took time.Duration) {
		t.Helper()
		start := time.Now()
		interrupted, err := produce(ctx, cfg, newBatchGen(cfg), func(b *pendingBatch) error {
			frames = append(frames, b.frames)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return frames, interrupted, time.Since(start)
	}
	base := sendConfig{batch: 100, devices: 2, metric: "m"}

	t.Run("frames limit cuts the last batch", func(t *testing.T) {
		cfg := base
		cfg.frames = 250
		got, interrupted, _ := collect(t, context.Background(), cfg)
		if want := []int{100, 100, 50}; !slices.Equal(got, want) || interrupted {
			t.Errorf("batches %v interrupted %v, want %v and not interrupted", got, interrupted, want)
		}
	})
	t.Run("rate paces the batches", func(t *testing.T) {
		cfg := base
		cfg.frames, cfg.rate = 1000, 10_000
		got, _, took := collect(t, context.Background(), cfg)
		// The tenth batch is due 90 ms after the first.
		if len(got) != 10 || took < 90*time.Millisecond {
			t.Errorf("%d batches in %s, want 10 in at least 90ms", len(got), took)
		}
	})
	t.Run("duration ends an unpaced run", func(t *testing.T) {
		cfg := base
		cfg.duration = 50 * time.Millisecond
		got, _, took := collect(t, context.Background(), cfg)
		if len(got) == 0 || took < cfg.duration {
			t.Errorf("%d batches in %s, want some, for at least %s", len(got), took, cfg.duration)
		}
	})
	t.Run("duration ends a paced run before a batch due after it", func(t *testing.T) {
		cfg := base
		cfg.duration, cfg.rate = 250*time.Millisecond, 1000 // a batch every 100 ms
		got, _, _ := collect(t, context.Background(), cfg)
		// Due at 0, 100 and 200 ms; on a loaded machine the third may
		// come too late to go out before the end.
		if len(got) < 2 || len(got) > 3 {
			t.Errorf("%d batches, want 3 (due at 0, 100 and 200 ms)", len(got))
		}
	})
	t.Run("cancel interrupts", func(t *testing.T) {
		cfg := base
		cfg.duration, cfg.rate = time.Hour, 1
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		interrupted, err := produce(ctx, cfg, newBatchGen(cfg), func(*pendingBatch) error {
			n++
			cancel() // while the next batch waits for its time
			return nil
		})
		if err != nil || !interrupted || n != 1 {
			t.Errorf("interrupted %v, err %v, %d batches; want interrupted after 1", interrupted, err, n)
		}
	})
	t.Run("stop from send", func(t *testing.T) {
		cfg := base
		cfg.frames = 1000
		n := 0
		interrupted, err := produce(context.Background(), cfg, newBatchGen(cfg), func(*pendingBatch) error {
			n++
			return errStopSending
		})
		if err != nil || interrupted || n != 1 {
			t.Errorf("interrupted %v, err %v, %d batches; want a quiet stop after 1", interrupted, err, n)
		}
	})
}

func TestSendStats(t *testing.T) {
	st := newSendStats()
	t0 := time.Now()
	batches := []*pendingBatch{{id: "b-1", frames: 10, sentAt: t0}, {id: "b-2", frames: 5, sentAt: t0}, {id: "b-3", frames: 7, sentAt: t0}}
	for _, b := range batches {
		st.sent(b, 100)
	}
	st.answer(batches[0], &client.Tier1Ack{OK: true, Accepted: 10, BatchID: "b-1"}, t0.Add(2*time.Millisecond))
	st.answer(batches[1], &client.Tier1Ack{BatchID: "b-2", Error: &client.Tier1AckError{Code: "invalid_params", Message: "frame 3: bad"}},
		t0.Add(4*time.Millisecond))
	if got := st.unanswered(); got != 7 {
		t.Errorf("unanswered = %d, want 7", got)
	}
	st.finish()
	sum := st.summary(sendConfig{})
	if sum.FramesSent != 22 || sum.BatchesSent != 3 || sum.Acknowledged != 10 || sum.Refused != 5 || sum.Unacknowledged != 7 ||
		sum.WireBytes != 300 || sum.FirstError != "batch b-2: invalid_params: frame 3: bad" {
		t.Errorf("summary = %+v", sum)
	}
	if sum.DurationSeconds != 0.004 || sum.FramesPerSecond != 2500 || sum.AckP50Ms != 2 || sum.AckP99Ms != 4 {
		t.Errorf("duration %v, rate %v, p50 %v, p99 %v; want 0.004 s, 2500 frames/s, 2 ms, 4 ms",
			sum.DurationSeconds, sum.FramesPerSecond, sum.AckP50Ms, sum.AckP99Ms)
	}
	if got, want := sum.BytesPerFrame, 300.0/22; got != want {
		t.Errorf("bytes per frame = %v, want %v", got, want)
	}
}

func TestScanFlatObject(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
		want     []string // key=value pairs as raw text
	}{
		{"frame", `{"device_id":"dev-1","seq":18446744073709551615,"ts":-5,"value":1e-7,"ok":true,"u":null}`, true,
			[]string{`"device_id"="dev-1"`, `"seq"=18446744073709551615`, `"ts"=-5`, `"value"=1e-7`, `"ok"=true`, `"u"=null`}},
		{"empty", `{}`, true, nil},
		{"spaces", " {\n\t\"a\" : \"x, }\" ,\r\n \"b\":2 } ", true, []string{`"a"="x, }"`, `"b"=2`}},
		{"escapes", `{"a\"b":"c\\\"d","e":"\u00e9"}`, true, []string{`"a\"b"="c\\\"d"`, `"e"="\u00e9"`}},
		{"nested object", `{"a":1,"b":{"c":2}}`, false, nil},
		{"array value", `{"a":[1]}`, false, nil},
		{"not an object", `[1,2]`, false, nil},
		{"trailing data", `{"a":1}x`, false, nil},
		{"truncated", `{"a":"x`, false, nil},
		{"missing colon", `{"a" 1}`, false, nil},
		{"empty input", ``, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			ok := scanFlatObject([]byte(tt.in), func(k, v []byte) { got = append(got, string(k)+"="+string(v)) })
			if ok != tt.ok || (tt.ok && !slices.Equal(got, tt.want)) {
				t.Errorf("scanFlatObject(%q) = %v %q, want %v %q", tt.in, ok, got, tt.ok, tt.want)
			}
		})
	}
}

// FuzzScanFlatObject checks the fast CSV path against encoding/json: when
// the scan accepts a valid JSON text, it finds exactly the members the
// decoder finds, and the cells are the same.
func FuzzScanFlatObject(f *testing.F) {
	for _, s := range []string{
		`{"device_id":"dev-0001","seq":1,"ts":1700000000000000000,"metric":"temperature","value":21.5}`,
		`{"a\"b":"c\\\"d","e":"\u00e9","n":null,"t":false}`, `{}`, ` { "a" : 1 } `, `{"a":{"b":1}}`, `{"a":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := map[string]string{}
		ok := scanFlatObject(b, func(k, v []byte) { got[jsonText(k)] = csvValue(v) })
		if !ok || !json.Valid(b) {
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatalf("scan accepted %q, which does not decode as an object: %v", b, err)
		}
		want := map[string]string{}
		for k, v := range obj {
			want[k] = csvValue(v)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("scan of %q = %q, encoding/json gives %q", b, got, want)
		}
	})
}
